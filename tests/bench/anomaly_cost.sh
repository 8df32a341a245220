#!/usr/bin/env bash
# Cost per part crop of the demo anomaly model (models/demo/part_anomaly.pt,
# PaDiM-style) vs the supervised defect classifier, both fp32, through
# torchinfer inference-region=roi-list as the QA line runs them: roi-bench
# throughput (NV12 1280x720 frames, 16 part boxes of 128x128 px each, batch
# 8, 2 threads), the models alternated round by round in one run, medians
# of the rounds. Prints objects/s and ms per crop (1000 / objects/s) of the
# element and of the bare model (Engine::run on ready batches).
#
#   tests/bench/anomaly_cost.sh [ROUNDS=5] [FRAMES=20]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/lib.sh
rounds=${1:-5}
frames=${2:-20}
bench=build/tests/bench/roi-bench
export GST_PLUGIN_PATH="$PWD/build/plugin"
# fp32 only: roi-bench's bare engine runs fp32 (no int8 anomaly model is
# shipped; docs/anomaly.md "Cost per crop" has the int8 classifier).
models=(models/demo/defect_classifier.pt models/demo/part_anomaly.pt)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
machine_line
for ((r = 1; r <= rounds; r++)); do
  for m in "${models[@]}"; do
    line=$("$bench" throughput --model "$m" --width 96 --height 96 --batch 8 --objects 16 \
      --frames "$frames" --rounds 1 --threads 2 --box 128)
    n=$(basename "$m" .pt)
    sed -E 's/^roi-list objects\/s ([0-9.]+) .*/\1/' <<<"$line" >>"$tmp/$n.element"
    sed -E 's/.*bare classifier images\/s ([0-9.]+) .*/\1/' <<<"$line" >>"$tmp/$n.bare"
  done
done
printf '%-22s %14s %12s %14s %12s\n' model "element obj/s" "ms/crop" "bare img/s" "ms/crop"
for m in "${models[@]}"; do
  n=$(basename "$m" .pt)
  e=$(median <"$tmp/$n.element")
  b=$(median <"$tmp/$n.bare")
  printf '%-22s %14.1f %12.2f %14.1f %12.2f\n' "$n" "$e" "$(echo "1000/$e" | bc -l)" "$b" \
    "$(echo "1000/$b" | bc -l)"
done
echo "($rounds rounds, models alternated; $frames frames x 16 objects per round, batch 8, 2 threads)"
