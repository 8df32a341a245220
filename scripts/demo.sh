#!/usr/bin/env bash
# The main job: set up, build, then run the QA-line demo headless on the
# bundled model and clip. Prints per-frame results and a summary; writes
# out/demo/{results.jsonl,annotated.mkv,snapshot.png}.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >&2
export GST_PLUGIN_PATH="$PWD/build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
mkdir -p out/demo
exec ./build/pipelines/torchinfer-demo \
  --model models/demo/parts_detector.pt \
  --clip models/demo/line.mkv \
  --truth models/demo/line.truth.json \
  --out out/demo "$@"
