#!/usr/bin/env bash
# The main job: set up, build, then run the two-stage QA-line demo headless
# on the bundled models and clip: the detector finds the parts, torchtrack
# gives each an id, the defect classifier judges each part's crop, one
# verdict per part id. Prints the decisions, then the scores against the
# clip's truth (detection recall/precision, MOTA, IDF1, id switches, count
# error, verdict accuracy); writes out/demo/{decisions.jsonl,results.jsonl,
# annotated.mkv,snapshot.png}. Extra arguments go to torchinfer-qa-line
# (e.g. --inference-interval 3, --classifier models/demo/defect_classifier_int8.pt).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >&2
export GST_PLUGIN_PATH="$PWD/build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
mkdir -p out/demo
exec ./build/pipelines/torchinfer-qa-line \
  --model models/demo/parts_detector.pt \
  --classifier models/demo/defect_classifier.pt \
  --clip models/demo/line.mkv \
  --truth models/demo/line.truth.json \
  --output out/demo/decisions.jsonl \
  --out out/demo "$@"
