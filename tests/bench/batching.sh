#!/usr/bin/env bash
# Batching benchmark: torchinfer at batch 1/4/8 on the same YUY2 source,
# as fast as possible (throughput; drop-policy auto = block) and live at
# 30 fps (latency; drop-policy auto = skip), runs
# interleaved and repeated; medians of the element's own stats.
# Usage: tests/bench/batching.sh MODEL.pt [reps] [frames] [WxH] [batches]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
model=${1:?usage: $0 MODEL.pt [reps] [frames] [WxH] [batches]}
reps=${2:-5}
frames=${3:-300}
size=${4:-1280x720}
batches=${5:-1 4 8}
w=${size%x*}
h=${size#*x}
export GST_PLUGIN_PATH=$PWD/build/plugin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run; prints "fps p50 p99" from the torchinfer-stats message at EOS.
run() {  # batch live
  local live=$2 n=$frames
  [ "$live" = true ] && n=$((frames < 150 ? frames : 150))
  gst-launch-1.0 -m videotestsrc num-buffers="$n" is-live="$live" pattern=ball \
    ! "video/x-raw,format=YUY2,width=$w,height=$h,framerate=30/1" \
    ! torchinfer model="$model" batch-size="$1" batch-timeout=100000 \
      stats-interval=1000000 \
    ! fakesink sync="$live" 2>/dev/null |
    grep -o 'torchinfer-stats.*' | tail -1 |
    sed -E 's/.*fps=\(double\)([0-9.e+-]+).*total-ms-p50=\(double\)([0-9.e+-]+), total-ms-p95=\(double\)[0-9.e+-]+, total-ms-p99=\(double\)([0-9.e+-]+).*/\1 \2 \3/'
}

for r in $(seq "$reps"); do
  for b in $batches; do
    for live in false true; do
      echo "$b $live $(run "$b" "$live")" >> "$tmp/runs"
    done
  done
done

machine_line
echo "command: $0 $model $reps $frames $size \"$batches\""
echo "model: $model; source: videotestsrc YUY2 ${w}x${h}; medians of $reps interleaved runs"
printf "%-6s %14s %16s %16s %16s %16s\n" batch "images/s" "p50 ms (fast)" "p99 ms (fast)" "p50 ms (live)" "p99 ms (live)"
for b in $batches; do
  fps=$(awk -v b="$b" '$1==b && $2=="false" {print $3}' "$tmp/runs" | median)
  fp50=$(awk -v b="$b" '$1==b && $2=="false" {print $4}' "$tmp/runs" | median)
  fp99=$(awk -v b="$b" '$1==b && $2=="false" {print $5}' "$tmp/runs" | median)
  lp50=$(awk -v b="$b" '$1==b && $2=="true" {print $4}' "$tmp/runs" | median)
  lp99=$(awk -v b="$b" '$1==b && $2=="true" {print $5}' "$tmp/runs" | median)
  printf "%-6s %14.1f %16.1f %16.1f %16.1f %16.1f\n" "$b" "$fps" "$fp50" "$fp99" "$lp50" "$lp99"
done
