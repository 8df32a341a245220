#!/usr/bin/env bash
# What the element costs beyond preprocessing (issue 16, item 4): a trivial
# model (tests' grid_probe.pt: a 4x4 average pool, fed 224x224) on 1920x1080
# YUY2 frames from a camera-like source (imagefreeze re-sending one frame, no
# pixel work), as fast as it goes, one build or two interleaved (A/B).
#
#   tests/bench/overhead.sh [--reps 5] [--frames 600] [--builds "build"]
#   tests/bench/overhead.sh --builds "/work/main/build build"   # before / after
#
# Per build and rep, four pipelines: the source into fakesink alone and
# through torchinfer, each with `frames` and 3x`frames` buffers. Element CPU
# per frame = ((CPU(3n) - CPU(n)) with torchinfer - the same without) / 2n,
# so start-up, loading and warm-up cancel out; wall ms per frame likewise. The stage p50s come from the
# longer run's torchinfer-stats. The bare preprocessing of the same frame is
# preprocess-bench's YUY2_1920x1080_to_224 (one thread).
# OMP wait policy: each build's plugin default unless WAIT="VAR=value ..." is
# given (e.g. WAIT="OMP_WAIT_POLICY=PASSIVE" to compare hops alone).
# EXTRA="prop=value ..." adds torchinfer properties, e.g.
# EXTRA="preprocess-on=streaming-thread".
# Not a test: figures vary with load; the load is printed with each run.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=5 frames=600 builds=build
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --frames) frames=$2 ;;
    --builds) builds=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
model=${MODEL:-build/tests/grid_probe.pt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
caps="video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1"

# Runs a pipeline; prints "cpu_s wall_s" then the last torchinfer-stats line.
measure() {  # build n with_element
  local b=$1 n=$2 el=()
  # shellcheck disable=SC2206
  [ "$3" = 1 ] && el=(torchinfer "model=$model" input-width=224 input-height=224
                     stats-interval=100000000 ${EXTRA:-} !)
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  env ${WAIT:-} GST_PLUGIN_PATH="$b/plugin" /usr/bin/time -f "%U %S" -o "$tmp/time" \
    gst-launch-1.0 -m videotestsrc num-buffers=1 pattern=black ! "$caps" \
    ! imagefreeze num-buffers="$n" ! "${el[@]}" fakesink sync=false > "$tmp/out" 2>/dev/null
  t1=$(date +%s.%N)
  awk -v t0="$t0" -v t1="$t1" '{printf "%.4f %.4f\n", $1 + $2, t1 - t0}' "$tmp/time"
  grep -o 'torchinfer-stats.*' "$tmp/out" | tail -1 || true
}

machine_line
echo "command: ${WAIT:+WAIT=\"$WAIT\" }${EXTRA:+EXTRA=\"$EXTRA\" }$0 --reps $reps --frames $frames --builds \"$builds\""
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$reps"); do
  for b in $builds; do
    read -r s1 _ < <(measure "$b" "$frames" 0 | head -1)
    read -r s3 _ < <(measure "$b" $((3 * frames)) 0 | head -1)
    read -r c1 w1 < <(measure "$b" "$frames" 1 | head -1)
    out=$(measure "$b" $((3 * frames)) 1)
    read -r c3 w3 <<<"$(head -1 <<<"$out")"
    stats=$(tail -1 <<<"$out")
    stage() { grep -o "$1-ms-p50=(double)[0-9.e+-]*" <<<"$stats" | sed 's/.*)//'; }
    line=$(awk -v n="$frames" -v s1="$s1" -v s3="$s3" -v c1="$c1" -v c3="$c3" -v w1="$w1" -v w3="$w3" \
      'BEGIN {printf "element_cpu_ms=%.3f wall_ms=%.3f source_cpu_ms=%.3f",
              1000 * ((c3 - c1) - (s3 - s1)) / (2 * n), 1000 * (w3 - w1) / (2 * n),
              1000 * (s3 - s1) / (2 * n)}')
    echo "run rep=$r build=$b $line queue=$(stage queue) preprocess=$(stage preprocess)" \
         "inference=$(stage inference) total=$(stage total) load=$(cut -d' ' -f1 /proc/loadavg)"
    echo "$b $line $(stage queue) $(stage preprocess) $(stage inference) $(stage total)" >> "$tmp/runs"
  done
done
pre=$(build/tests/bench/preprocess-bench --benchmark_filter='BM_Fused/YUY2_1920x1080_to_224$' \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null |
      awk '/_median/ {print $4 / 1e6 * ($5 == "ns" ? 1 : ($5 == "us" ? 1e3 : 1e6))}' | head -1)
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bare preprocessing, YUY2 1920x1080 -> 224x224 (preprocess-bench median CPU time): ${pre:-?} ms"
echo "| build | element CPU ms/frame | element - bare preprocessing | wall ms/frame | queue p50 | preprocess p50 | inference p50 | total p50 |"
echo "|---|---|---|---|---|---|---|---|"
for b in $builds; do
  col() { awk -v b="$b" -v k="$1" '$1==b {print $k}' "$tmp/runs" | sed 's/.*=//' | median; }
  cpu=$(col 2)
  printf "| %s | %.3f | %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n" "$b" "$cpu" \
    "$(awk -v c="$cpu" -v p="${pre:-0}" 'BEGIN {printf "%.3f", c - p}')" "$(col 3)" \
    "$(col 5)" "$(col 6)" "$(col 7)" "$(col 8)"
done
