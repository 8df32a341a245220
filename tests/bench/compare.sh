#!/usr/bin/env bash
# torchinfer against the alternatives (issue 8): one command runs torchinfer
# (batch 1 and B), the naive Python app, the naive C++ app and the bare
# libtorch loop interleaved and repeated on the same source and models,
# writes every run to a CSV, prints the median table with ratios and draws
# the plots of docs/performance.md.
#
#   tests/bench/compare.sh [--smoke] [--plots DIR] [compare.py options]
#   tests/bench/compare.sh --reps 3 --models mobilenet_v2:fp32,resnet18:int8,detector:fp32 \
#       --sizes 1280x720 --modes fast,live            # the defaults
#   tests/bench/compare.sh --models resnet50:fp32,resnet50:int8,detector:int8 --sizes 1920x1080
#
# --smoke: a few frames of the tiny test model through all four approaches,
# plots into a temporary directory (meson test bench-smoke-compare).
# Options: python3 tests/bench/compare.py --help. Not a test: figures vary with load.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-$PWD/build}
plots=docs/images
smoke=false
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=true ;;
    --plots) plots=$2; shift ;;
    --build) build=$2; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csv=$build/bench-compare.csv
scaling=$build/bench-scaling.csv
if $smoke; then
  models=${TORCHINFER_TEST_MODELS:-$build/tests}
  args=(--models "$models/tiny_classifier.pt:fp32" --reps 1 --frames 8 --naive-frames 4
        --live-frames 4 --bare-iters 2 --batch 2 
        --scaling-batches 1,2 --scaling-threads 1 --scaling-iters 1 "${args[@]}")
  csv=$tmp/runs.csv scaling=$tmp/scaling.csv
  plots=$tmp/plots
fi
/usr/bin/python3 tests/bench/compare.py --build "$build" --csv "$csv" --scaling "$scaling" "${args[@]}"
/usr/bin/python3 tests/bench/plots.py "$csv" "$scaling" "$plots"
