#!/usr/bin/env bash
# torchinfer against bare libtorch on a camera-like source (issue 16): the
# element on 1920x1080 YUY2 frames from imagefreeze (one frame re-sent, no
# pixel work), as fast as it goes, against two bare loops on the same
# optimised model, batch and threads, interleaved per rep:
#   forward   torchinfer-bench bare: forward() alone on a ready input (the
#             upper bound; no preprocessing at all)
#   app       torchinfer-bench bare --camera 1920x1080: the same loop that
#             first preprocesses each frame with the project's Preprocessor
#             on its one thread, as a hand-written app would
# Element fps = 2n / (wall(3n frames) - wall(n frames)), so loading and
# warm-up cancel out.
#
#   tests/bench/element_vs_bare.sh [--reps 3] [--frames 120]
#       [--models "resnet18:fp32 resnet18:int8 detector:fp32"] [--batches "1 4"]
#       [--threads 2] [--extra "preprocess-on=streaming-thread"]
# Per frame: preprocessing ms = 1/app - 1/forward (the app's one-thread
# preprocessing, measured in the same rep); "element - preprocessing" is the
# issue's "element cost <= preprocessing + 0.2 ms" (wall, from fps); CPU ms per
# frame is user+sys over all threads, for the element (3n - n frames) and the
# app's timed loop.
# Models: "trivial" (the tests' grid_probe.pt, a 4x4 pool, fed 224x224: the
# element's own cost shows), resnet18[_int8] from $BENCH_MODELS (default build/bench-models,
# made by tests/bench/compare.sh) and the demo detector. Not a test: figures
# vary with load; the load is printed with each run.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=3 frames=120 models="resnet18:fp32 resnet18:int8 detector:fp32" batches="1 4" threads=2
extra=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --frames) frames=$2 ;;
    --models) models=$2 ;;
    --batches) batches=$2 ;;
    --threads) threads=$2 ;;
    --extra) extra=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
bm=${BENCH_MODELS:-build/bench-models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
caps="video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1"

path_of() {  # name precision
  case $1 in
    trivial) echo build/tests/grid_probe.pt ;;  # 4x4 average pool: the hops alone
    detector) [ "$2" = int8 ] && echo models/demo/parts_detector_int8.pt || echo models/demo/parts_detector.pt ;;
    *) [ "$2" = int8 ] && echo "$bm/${1}_int8.pt" || echo "$bm/$1.pt" ;;
  esac
}
side() {  # model.pt key default
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], $3))" \
    "${1%.pt}.json" "$2"
}
wall() {  # model precision batch n: prints "wall_s cpu_s"
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  GST_PLUGIN_PATH=build/plugin /usr/bin/time -f "%U %S" -o "$tmp/time" gst-launch-1.0 -q \
    videotestsrc num-buffers=1 pattern=black ! "$caps" ! imagefreeze num-buffers="$4" \
    ! torchinfer model="$1" precision="$2" input-width="$w" input-height="$h" batch-size="$3" \
    threads="$threads" drop-policy=block $extra ! fakesink sync=false >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" '{print b - a, $1 + $2}' "$tmp/time"
}
fps_of() { grep -o 'fps=[0-9.]*' | cut -d= -f2; }
cpu_of() { grep -o 'cpu_ms=[0-9.]*' | cut -d= -f2; }

machine_line
echo "command: $0 --reps $reps --frames $frames --models \"$models\" --batches \"$batches\" --threads $threads${extra:+ --extra \"$extra\"}"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$reps"); do
  for mp in $models; do
    name=${mp%%:*} prec=${mp##*:}
    m=$(path_of "$name" "$prec")
    [ -f "$m" ] || { echo "missing $m (run tests/bench/compare.sh once to export it)" >&2; exit 2; }
    w=$(side "$m" input_width 224) h=$(side "$m" input_height 224)
    [ "$name" = trivial ] && w=224 h=224  # the size the issue's 1080p figures use
    for b in $batches; do
      iters=$(( (frames + b - 1) / b ))
      fwd=$(build/tests/bench/torchinfer-bench bare --model "$m" --batch "$b" --threads "$threads" \
              --iters "$iters" --width "$w" --height "$h" --precision "$prec" | fps_of)
      appout=$(build/tests/bench/torchinfer-bench bare --model "$m" --batch "$b" --threads "$threads" \
              --iters "$iters" --width "$w" --height "$h" --precision "$prec" --camera 1920x1080)
      app=$(fps_of <<<"$appout") appcpu=$(cpu_of <<<"$appout")
      read -r w1 c1 < <(wall "$m" "$prec" "$b" "$frames")
      read -r w3 c3 < <(wall "$m" "$prec" "$b" $((3 * frames)))
      el=$(awk -v n="$frames" -v a="$w1" -v b="$w3" 'BEGIN {print 2 * n / (b - a)}')
      elcpu=$(awk -v n="$frames" -v a="$c1" -v b="$c3" 'BEGIN {print 1000 * (b - a) / (2 * n)}')
      printf 'run rep=%s model=%s batch=%s element_fps=%.1f forward_fps=%.1f app_fps=%.1f element_cpu_ms=%.3f app_cpu_ms=%.3f load=%s\n' \
        "$r" "$mp" "$b" "$el" "$fwd" "$app" "$elcpu" "$appcpu" "$(cut -d' ' -f1 /proc/loadavg)"
      echo "$mp $b $el $fwd $app $elcpu $appcpu" >> "$tmp/runs"
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| model | batch | element fps | bare forward fps | bare app fps | element / forward | element / app | element ms/frame | preprocessing ms | element - preprocessing ms | element CPU ms/frame | app CPU ms/frame |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for mp in $models; do
  for b in $batches; do
    col() { awk -v m="$mp" -v b="$b" -v c="$1" '$1 == m && $2 == b {print $c}' "$tmp/runs" | median; }
    el=$(col 3) fwd=$(col 4) app=$(col 5) elcpu=$(col 6) appcpu=$(col 7)
    awk -v m="$mp" -v b="$b" -v e="$el" -v f="$fwd" -v a="$app" -v ec="$elcpu" -v ac="$appcpu" \
      'BEGIN {pre = 1000 / a - 1000 / f
              printf "| %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f | %.3f | %.3f | %+.3f | %.3f | %.3f |\n",
                     m, b, e, f, a, e / f, e / a, 1000 / e, pre, 1000 / e - pre, ec, ac}'
  done
done
