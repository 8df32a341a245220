#!/usr/bin/env bash
# RTSP analytics on one machine, from the repository root after
# ./scripts/setup.sh: serve the annotated test pattern, analyse it with the
# reconnecting client for 15 s, kill the server half-way and start it again.
# The client's JSON lines go to out/rtsp/results.jsonl, its status to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
export GST_PLUGIN_PATH="$PWD/build/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
PORT=${PORT:-8554}
MODEL=models/demo/parts_classifier.pt
mkdir -p out/rtsp
rm -f out/rtsp/results.jsonl

./build/pipelines/torchinfer-rtsp-server --port "$PORT" --model "$MODEL" &
server=$!
./build/pipelines/torchinfer-rtsp-client --url "rtsp://127.0.0.1:$PORT/stream" \
  --model "$MODEL" --output out/rtsp/results.jsonl --stall-timeout 2 --duration 15 &
client=$!
# Let results flow for a while first (the first start loads the plugin registry).
for _ in $(seq 100); do [ -s out/rtsp/results.jsonl ] && break; sleep 0.2; done
sleep 3
kill -KILL "$server"
sleep 1
./build/pipelines/torchinfer-rtsp-server --port "$PORT" --model "$MODEL" &
server=$!
rc=0
wait "$client" || rc=$?
kill -TERM "$server"
wait "$server" || true
echo "client exit code $rc; $(wc -l < out/rtsp/results.jsonl) results in out/rtsp/results.jsonl"
