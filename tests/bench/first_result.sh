#!/usr/bin/env bash
# Start-up as a user sees it (issue 16, item 5): gst-launch-1.0 with
# torchinfer at batch 1, 8 and 64 on the demo detector and ResNet-18, timed
# from "Setting pipeline to PAUSED" (the state change that loads, optimises
# and warms the model up) and from "Setting pipeline to PLAYING" to the first
# buffer leaving torchinfer (identity eos-after=1 ends the run there).
# Two sources of 1920x1080 YUY2:
#   live   imagefreeze is-live=true at 30 fps, a camera: the batcher runs a
#          partial batch once its queue budget is spent, so the first result
#          does not wait for batch-size frames
#   file   imagefreeze as fast as it goes, like a file: the first result
#          waits for a full batch, and the pipeline prerolls on it, so it
#          comes before PLAYING (only "from PAUSED" is shown)
#
#   tests/bench/first_result.sh [--reps 3] [--batches "1 8 64"]
#       [--models "detector resnet18"] [--build build] [--props "lanes=2"]
# ResNet-18 comes from $BENCH_MODELS (default build/bench-models, made by
# tests/bench/compare.sh). Medians of --reps fresh processes. Not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=3 batches="1 8 64" models="detector resnet18" build=build props=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --batches) batches=$2 ;;
    --models) models=$2 ;;
    --build) build=$2 ;;
    --props) props=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
bm=${BENCH_MODELS:-build/bench-models}
caps="video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

path_of() {
  case $1 in
    detector) echo models/demo/parts_detector.pt ;;
    *) echo "$bm/$1.pt" ;;
  esac
}
# Prints "from_paused_ms from_playing_ms" for one fresh gst-launch.
once() {  # model batch live(true|false)
  local n=$(($2 * 3))
  GST_PLUGIN_PATH="$build/plugin" stdbuf -oL gst-launch-1.0 videotestsrc num-buffers=1 \
    pattern=black ! "$caps" ! imagefreeze is-live="$3" num-buffers="$n" \
    ! torchinfer model="$1" batch-size="$2" drop-policy=block $props ! identity eos-after=1 \
    ! fakesink 2>&1 | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done > "$tmp/log"
  awk '/Setting pipeline to PAUSED/ {p = $1} /Setting pipeline to PLAYING/ {q = $1}
       /Got EOS/ && !e {e = $1} END {
         if (!p || !q || !e) {print "nan nan"; exit}
         printf "%.0f %.0f\n", 1000 * (e - p), 1000 * (e - q)}' "$tmp/log"
}

machine_line
echo "command: $0 --reps $reps --batches \"$batches\" --models \"$models\" --build $build --props \"$props\""
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$reps"); do
  for name in $models; do
    m=$(path_of "$name")
    [ -f "$m" ] || { echo "missing $m (run tests/bench/compare.sh once to export it)" >&2; exit 2; }
    for b in $batches; do
      for live in true false; do
        read -r fp fq < <(once "$m" "$b" "$live")
        echo "run rep=$r model=$name batch=$b live=$live from_paused_ms=$fp from_playing_ms=$fq"
        echo "$name $b $live $fp $fq" >> "$tmp/runs"
      done
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if grep -q nan "$tmp/runs"; then
  echo "a run did not reach its first result (see the runs above)" >&2
  exit 1
fi
echo "| model | batch-size | live: PAUSED → first result | live: PLAYING → first result | file: PAUSED → first result |"
echo "|---|---|---|---|---|"
for name in $models; do
  for b in $batches; do
    col() { awk -v m="$name" -v b="$b" -v l="$1" -v c="$2" '$1 == m && $2 == b && $3 == l {print $c}' "$tmp/runs" | median; }
    echo "| $name | $b | $(col true 4) ms | $(col true 5) ms | $(col false 4) ms |"
  done
done
