#!/usr/bin/env bash
# malloc() calls per frame, per thread (issue 16, item 4): the element on
# 640x480 YUY2 frames from imagefreeze with the trivial test model, run for
# n and 3n frames under an LD_PRELOAD counter (tests/bench/malloc_per_thread.c);
# per thread, (count(3n) - count(n)) / 2n, so loading and warm-up cancel out.
# Threads: imagefreeze0:sr = the streaming thread (torchinfer's chain),
# torchinfer0:src = the output thread (metas, push), the unnamed one with the
# most calls per frame = the batcher's worker (forward()).
#
#   tests/bench/allocs.sh [--frames 200] [--extra "preprocess-on=streaming-thread"] [--build build]
set -euo pipefail
cd "$(dirname "$0")/../.."
frames=200 extra="" build=build
while [ $# -gt 0 ]; do
  case $1 in
    --frames) frames=$2 ;;
    --extra) extra=$2 ;;
    --build) build=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC -o "$tmp/count.so" tests/bench/malloc_per_thread.c -lpthread
caps="video/x-raw,format=YUY2,width=640,height=480,framerate=30/1"
run() {  # n -> "name count" per thread, numbered when names repeat
  # shellcheck disable=SC2086
  LD_PRELOAD="$tmp/count.so" GST_PLUGIN_PATH="$build/plugin" gst-launch-1.0 -q videotestsrc \
    num-buffers=1 pattern=black ! "$caps" ! imagefreeze num-buffers="$1" \
    ! torchinfer model="$build/tests/grid_probe.pt" $extra ! fakesink sync=false 2>&1 |
    awk '/^THREAD/ {print $2, $3}'
}
run "$frames" > "$tmp/a"
run $((3 * frames)) > "$tmp/b"
echo "command: $0 --frames $frames${extra:+ --extra \"$extra\"}"
echo "| thread | malloc calls per frame |"
echo "|---|---|"
# Same-named threads (the worker and OpenMP threads are all "gst-launch-1.0")
# pair by their rank in count order.
join <(sort -k1,1 -k2,2n "$tmp/a" | awk '{print $1 "#" ++i[$1], $2}' | sort) \
     <(sort -k1,1 -k2,2n "$tmp/b" | awk '{print $1 "#" ++i[$1], $2}' | sort) |
  awk -v n="$frames" '{d = ($3 - $2) / (2 * n); if (d >= 0.05) printf "| %s | %.1f |\n", $1, d}'
