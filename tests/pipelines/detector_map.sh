#!/usr/bin/env bash
# Accuracy of the shipped detector through the plugin: a held-out synthetic
# set (200 lossless PNG frames, generated deterministically) runs through
# torchinfer ! torchnms ! torchmetaconvert; its mAP@0.5 must equal the Python
# reference within 0.01, and the int8 model's within 0.02 of fp32. The
# reference is plain NMS, so torchnms runs without containment suppression.
# Usage: detector_map.sh SOURCE_ROOT WORK_DIR
set -euo pipefail
root=$1
work=$2
py=/usr/bin/python3
eval="$py $root/models/demo/eval_detector.py"
mkdir -p "$work"
[ -f "$work/heldout/truth.json" ] || $eval generate "$work/heldout" --count 200 >/dev/null

map_of() { sed -nE 's/.*mAP@0\.5 ([0-9.]+).*/\1/p' | head -1; }

plugin_map() {  # model precision
  gst-launch-1.0 -q multifilesrc location="$work/heldout/%04d.png" index=0 stop-index=199 \
    caps=image/png,framerate=30/1 ! pngdec ! videoconvert ! \
    torchinfer model="$1" precision="$2" batch-size=4 ! \
    torchnms confidence-threshold=0.001 iou-threshold=0.45 max-detections=300 suppress-contained=0 ! \
    torchmetaconvert location="$work/dets-$2.jsonl" ! fakesink
  $eval plugin "$work/heldout" "$work/dets-$2.jsonl" | map_of
}

ref=$($eval reference "$work/heldout" --model "$root/models/demo/parts_detector.pt" | map_of)
fp32=$(plugin_map "$root/models/demo/parts_detector.pt" fp32)
int8=$(plugin_map "$root/models/demo/parts_detector_int8.pt" int8)
echo "mAP@0.5: python reference $ref, plugin fp32 $fp32, plugin int8 $int8"
awk -v r="$ref" -v f="$fp32" -v i="$int8" 'BEGIN {
  d = f - r; if (d < 0) d = -d; e = i - f; if (e < 0) e = -e;
  printf "plugin - reference: %.4f (limit 0.01); int8 - fp32: %.4f (limit 0.02)\n", d, e;
  exit !(r > 0.9 && d <= 0.01 && e <= 0.02) }'
