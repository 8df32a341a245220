#!/usr/bin/env bash
# Bayer cameras (issue 25): torchinfer reading the mosaic straight into a
# trivial model fed 224x224 against the chain users write first,
# bayer2rgb ! videoconvert ! videoscale to 224x224 RGB, then the same
# torchinfer; 2448x2048 (5 MP) and 1920x1200 BayerBG8, steady state.
#
#   tests/bench/bayer.sh [--reps 3] [--window 10] [--models "pixel_probe grid_probe"] [--build build]
#
# Two trivial models, both numbers kept: pixel_probe (returns 4 pixels of
# its input: next to no forward(), so the figure is the conversion cost the
# issue asks about) and grid_probe (4x4 average pooling over the whole
# 224x224 input: a few hundred microseconds of forward(), paid by both
# pipelines alike, which pulls the ratio towards 1).
#
# The source is one BayerBG8 frame (rgb2bayer of videotestsrc's SMPTE bars)
# re-read from a file by multifilesrc (page cache: a memcpy), looping
# without end into fpsdisplaysink (fakesink, sync=false), which reports the
# frames rendered every 100 ms. Per rep and size, three pipelines (source
# alone, ours, the user chain). Steady state only: once frames flow, after
# a 2 s settle, the process's CPU (user + sys, /proc/PID/stat) and the
# frame count are read, again after --window seconds, and CPU per frame is
# their ratio; the source's own cost is then subtracted. Start-up (libtorch
# loading, model optimisation, warm-up) falls outside the window. (The
# previous method, the difference of 100- and 300-frame runs, cancelled
# start-up only on average: its CPU varies by about +-0.5 s on a loaded
# 2-core machine, +-2.5 ms per frame over 200 frames.) Medians over reps;
# the ratio is the user chain's CPU per frame over ours. torchinfer runs
# threads=1 in both (a trivial model: a second OpenMP thread would only
# spin). Not a test: the load is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=3 window=10 build=build models="pixel_probe grid_probe"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --window) window=$2 ;;
    --build) build=$2 ;;
    --models) models=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private plugin registry, scanned once before measuring: on a shared
# machine another build invalidates the user's registry, and a rescan
# (which loads libtorch) inside one measured run costs a second of CPU.
export GST_REGISTRY="$tmp/registry.bin" GST_PLUGIN_PATH="$build/plugin"
gst-inspect-1.0 torchinfer > /dev/null

tick=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + sys, all threads
rendered() { grep -o 'rendered: [0-9]*' "$1" | tail -1 | cut -d' ' -f2; }

per_frame() {  # w h kind [model] -> steady-state CPU ms per frame, source included
  local w=$1 h=$2 tail=() model=$build/tests/${4:-none}.pt pid c0 n0 c1 n1 waited=0
  case $3 in
    source) tail=() ;;
    ours) tail=(torchinfer "model=$model" input-width=224 input-height=224 threads=1 !) ;;
    chain) tail=(bayer2rgb ! videoconvert ! videoscale ! "video/x-raw,format=RGB,width=224,height=224" !
                 torchinfer "model=$model" input-width=224 input-height=224 threads=1 !) ;;
  esac
  [ -s "$tmp/$w.raw" ] || gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte \
    ! "video/x-raw,format=ARGB,width=$w,height=$h" ! rgb2bayer ! video/x-bayer,format=bggr \
    ! filesink location="$tmp/$w.raw" > /dev/null
  OMP_NUM_THREADS=1 gst-launch-1.0 -v multifilesrc location="$tmp/$w.raw" loop=true \
    caps="video/x-bayer,format=bggr,width=$w,height=$h,framerate=30/1" ! "${tail[@]}" \
    fpsdisplaysink video-sink=fakesink text-overlay=false sync=false fps-update-interval=100 \
    > "$tmp/log" 2>&1 &
  pid=$!
  until [ -n "$(rendered "$tmp/log")" ]; do
    sleep 0.5
    waited=$((waited + 1))
    if ! kill -0 "$pid" 2> /dev/null || [ "$waited" -gt 240 ]; then
      kill "$pid" 2> /dev/null || true
      echo "pipeline failed: $3 $w x $h (log: $(tail -c 300 "$tmp/log"))" >&2
      exit 1
    fi
  done
  sleep 2
  c0=$(cpu_ticks "$pid") n0=$(rendered "$tmp/log")
  sleep "$window"
  c1=$(cpu_ticks "$pid") n1=$(rendered "$tmp/log")
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v t="$tick" 'BEGIN {printf "%.4f\n", 1000 * c / t / n}'
}

machine_line
echo "command: $0 --reps $reps --window $window --models \"$models\" --build $build"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for size in 2448x2048 1920x1200; do
  w=${size%x*} h=${size#*x}
  for r in $(seq "$reps"); do
    s=$(per_frame "$w" "$h" source)
    for m in $models; do
      o=$(per_frame "$w" "$h" ours "$m")
      c=$(per_frame "$w" "$h" chain "$m")
      echo "run size=$size rep=$r model=$m source_ms=$s ours_ms=$o chain_ms=$c load=$(cut -d' ' -f1 /proc/loadavg)"
      awk -v sz="$size" -v m="$m" -v s="$s" -v o="$o" -v c="$c" 'BEGIN {print sz, m, o - s, c - s}' >> "$tmp/runs"
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| Bayer frame | model | torchinfer on the mosaic, CPU ms/frame | bayer2rgb ! videoconvert ! videoscale ! torchinfer, CPU ms/frame | ratio |"
echo "|---|---|---|---|---|"
for size in 2448x2048 1920x1200; do
  for m in $models; do
    col() { awk -v s="$size" -v m="$m" -v k="$1" '$1==s && $2==m {print $k}' "$tmp/runs" | median; }
    o=$(col 3) c=$(col 4)
    awk -v s="$size" -v m="$m" -v o="$o" -v c="$c" \
      'BEGIN {printf "| %s | %s | %.3f | %.3f | %.1fx |\n", s, m, o, c, c / o}'
  done
done
