#!/bin/sh
# Start-up before/after (issue 16 item 5, docs/tuning.md "warmup, optimize"):
# time to ready and to the first full batch's result at batch 1, 8, 64 for
# the demo detector (320x240) and ResNet-18 (224), the 1dce655 warm-up rule
# ("old") interleaved with the current one ("new"), medians of 3.
#   tests/bench/startup.sh [BUILD_DIR] [RESNET18.pt]
# RESNET18.pt: /usr/bin/python3 models/export.py torchvision --arch resnet18
#   --random-weights --out build/bench-models/resnet18.pt (tests/bench/compare.sh makes it)
set -eu
build=${1:-build}
resnet=${2:-build/bench-models/resnet18.pt}
bench="$build/tests/bench/torchinfer-bench"
echo "# $(date -u '+%F %T') UTC, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in 1 8 64; do
  "$bench" startup --model models/demo/parts_detector.pt --width 320 --height 240 \
    --batch "$b" --rule both --reps 3 --threads 2 | sed 's/^/detector /'
  "$bench" startup --model "$resnet" --size 224 --batch "$b" --rule both --reps 3 --threads 2 |
    sed 's/^/resnet18 /'
done
echo "# done $(date -u '+%T') UTC, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
