#!/usr/bin/env bash
# The main job: set up, build only what it runs (not the tests; README says
# what the first run costs), then run the two-stage QA-line demo headless
# on the bundled models and clip: the detector finds the parts, torchtrack
# gives each an id, the defect classifier judges each part's crop, one
# verdict per part id, and torchcodes reads each part's DataMatrix serial
# once per track (--codes: the clip's parts each carry one, one damaged on
# purpose; add --require-code to reject a part without a readable code,
# defect no_code). Prints the decisions, each with its code, then the scores against the
# clip's truth (detection recall/precision, MOTA, IDF1, id switches, count
# error, verdict accuracy); writes out/demo/{decisions.jsonl,results.jsonl,
# annotated.mkv,snapshot.png}. Extra arguments go to torchinfer-qa-line
# (e.g. --inference-interval 3, --classifier models/demo/defect_classifier_int8.pt).
#
# --anomaly (first argument): the parts are judged by the anomaly model
# trained on good parts only (models/demo/part_anomaly.pt) instead of the
# classifier; each part's line and the scores then give its anomaly score,
# and the annotated video (out/demo-anomaly/) shows heat maps on the
# anomalous views. Add --classifier models/demo/defect_classifier.pt to
# judge with both (reject if either says defective).
#
# --segment (first argument): the parts are judged by defect area: the
# segmentation model models/demo/defect_seg.pt runs on the whole frame
# beside the detector, and a part is rejected when a defect's mask on it,
# median over its whole views, is 100 px or more (models/demo/
# eval_defect_seg.py's rule and limit); the clip has no calibration, so the demo
# takes 0.1 mm per pixel: the limit is 0.995 mm² (100 px = 1.00 mm²).
# Each part's line gives its defect areas (evidence.defect_area_mm2);
# out/demo-segment/results.jsonl has the masks (models/demo/
# eval_defect_seg.py jsonl scores them against the truth masks).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: the plugin, the runtime it loads, the QA app.
./scripts/setup.sh plugin/libgsttorchinfer.so libtorchinfer-runtime.so \
  pipelines/torchinfer-qa-line >&2
export GST_PLUGIN_PATH="$PWD/build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
out=out/demo
judge=(--classifier models/demo/defect_classifier.pt)
if [[ "${1:-}" == --anomaly ]]; then
  shift
  out=out/demo-anomaly
  judge=(--classifier none --anomaly models/demo/part_anomaly.pt)
elif [[ "${1:-}" == --segment ]]; then
  shift
  out=out/demo-segment
  judge=(--classifier none --segmenter models/demo/defect_seg.pt --defect-threshold 0.25
    --mm-per-pixel 0.1 --max-defect-area-mm2 0.995 --defect-area-views median)
fi
mkdir -p "$out"
exec ./build/pipelines/torchinfer-qa-line \
  --model models/demo/parts_detector.pt \
  "${judge[@]}" \
  --clip models/demo/line.mkv \
  --truth models/demo/line.truth.json \
  --output "$out/decisions.jsonl" \
  --codes --out "$out" "$@"
