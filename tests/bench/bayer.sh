#!/usr/bin/env bash
# Bayer cameras (issue 25): torchinfer reading the mosaic straight into a
# trivial model (tests' grid_probe.pt, fed 224x224) against the chain users
# write first, bayer2rgb ! videoconvert ! videoscale to 224x224 RGB, then the
# same torchinfer; 2448x2048 (5 MP) and 1920x1200 BayerBG8, steady state.
#
#   tests/bench/bayer.sh [--reps 3] [--frames 100] [--build build]
#
# The source is one BayerBG8 frame (rgb2bayer of videotestsrc's SMPTE bars)
# re-read from a file by multifilesrc (page cache: a memcpy). Per rep and size, three
# pipelines (source alone, ours, the user chain), each with n and 3n frames:
# CPU per frame = ((CPU(3n) - CPU(n)) - the source's) / 2n, so start-up,
# loading and warm-up cancel out. Medians over reps; the ratio is the user
# chain's CPU per frame over ours. torchinfer runs threads=1 in both (a
# trivial model: a second OpenMP thread would only spin). Not a test: the
# load is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=3 frames=100 build=build
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --frames) frames=$2 ;;
    --build) build=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
model=${MODEL:-$build/tests/grid_probe.pt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private plugin registry, scanned once before measuring: on a shared
# machine another build invalidates the user's registry, and a rescan
# (which loads libtorch) inside one measured run costs a second of CPU.
export GST_REGISTRY="$tmp/registry.bin" GST_PLUGIN_PATH="$build/plugin"
gst-inspect-1.0 torchinfer > /dev/null

cpu_of() {  # w h n kind -> user+sys seconds
  local w=$1 h=$2 n=$3 tail=()
  case $4 in
    source) tail=() ;;
    ours) tail=(torchinfer "model=$model" input-width=224 input-height=224 threads=1 !) ;;
    chain) tail=(bayer2rgb ! videoconvert ! videoscale ! "video/x-raw,format=RGB,width=224,height=224" !
                 torchinfer "model=$model" input-width=224 input-height=224 threads=1 !) ;;
  esac
  [ -s "$tmp/$w.raw" ] || gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte \
    ! "video/x-raw,format=ARGB,width=$w,height=$h" ! rgb2bayer ! video/x-bayer,format=bggr \
    ! filesink location="$tmp/$w.raw" > /dev/null
  rm -f "$tmp/time"
  OMP_NUM_THREADS=1 /usr/bin/time -f "%U %S" -o "$tmp/time" \
    gst-launch-1.0 -q multifilesrc location="$tmp/$w.raw" loop=true num-buffers="$n" \
    caps="video/x-bayer,format=bggr,width=$w,height=$h,framerate=30/1" \
    ! "${tail[@]}" fakesink sync=false > /dev/null 2>&1 || { echo "pipeline failed: $4 $w x $h" >&2; exit 1; }
  awk '{printf "%.4f\n", $1 + $2}' "$tmp/time"
}

per_frame() {  # w h kind -> ms per frame, source included
  local a b
  a=$(cpu_of "$1" "$2" "$frames" "$3")
  b=$(cpu_of "$1" "$2" $((3 * frames)) "$3")
  awk -v a="$a" -v b="$b" -v n="$frames" 'BEGIN {printf "%.4f\n", 1000 * (b - a) / (2 * n)}'
}

machine_line
echo "command: $0 --reps $reps --frames $frames --build $build"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for size in 2448x2048 1920x1200; do
  w=${size%x*} h=${size#*x}
  for r in $(seq "$reps"); do
    s=$(per_frame "$w" "$h" source)
    o=$(per_frame "$w" "$h" ours)
    c=$(per_frame "$w" "$h" chain)
    echo "run size=$size rep=$r source_ms=$s ours_ms=$o chain_ms=$c load=$(cut -d' ' -f1 /proc/loadavg)"
    awk -v sz="$size" -v s="$s" -v o="$o" -v c="$c" 'BEGIN {print sz, o - s, c - s}' >> "$tmp/runs"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| Bayer frame | torchinfer on the mosaic, CPU ms/frame | bayer2rgb ! videoconvert ! videoscale ! torchinfer, CPU ms/frame | ratio |"
echo "|---|---|---|---|"
for size in 2448x2048 1920x1200; do
  col() { awk -v s="$size" -v k="$1" '$1==s {print $k}' "$tmp/runs" | median; }
  o=$(col 2) c=$(col 3)
  awk -v s="$size" -v o="$o" -v c="$c" 'BEGIN {printf "| %s | %.3f | %.3f | %.1fx |\n", s, o, c, c / o}'
done
