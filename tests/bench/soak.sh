#!/usr/bin/env bash
# Soak test (not part of the suite): a live 1080p YUY2 source through
# torchinfer into fakesink for a while, RSS sampled every 10 s. Memory must
# be flat after warm-up: prints the samples and the growth after the first
# five minutes (glibc arenas and the model's workspaces settle by then), and
# fails if it exceeds 8 MB.
# Usage: tests/bench/soak.sh [minutes] [model] [extra torchinfer properties]
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-30}
model=${2:-models/demo/parts_classifier.pt}
extra=${3:-batch-size=4}
export GST_PLUGIN_PATH=$PWD/build/plugin
fps=30
frames=$((minutes * 60 * fps))
gst-launch-1.0 -q videotestsrc is-live=true num-buffers="$frames" pattern=ball \
  ! "video/x-raw,format=YUY2,width=1920,height=1080,framerate=$fps/1" \
  ! torchinfer model="$model" $extra ! fakesink sync=true &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
echo "command: $0 $minutes $model \"$extra\""
echo "seconds rss_kb"
t=0
base=""
max=0
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] || break
  echo "$t $rss"
  if [ "$t" -ge 300 ]; then
    [ -n "$base" ] || base=$rss
    [ "$rss" -gt "$max" ] && max=$rss
  fi
  sleep 10
  t=$((t + 10))
done
wait "$pid" || { echo "pipeline failed"; exit 1; }
trap - EXIT
[ -n "$base" ] || { echo "run too short to judge (needs > 300 s)"; exit 1; }
growth=$((max - base))
echo "rss after warm-up: ${base} kB; max later: ${max} kB; growth: ${growth} kB"
[ "$growth" -le 8192 ]
