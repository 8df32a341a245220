#!/usr/bin/env bash
# How long torchinfer-server takes to notice a machine-vision camera's loss,
# and to stop with a camera that no longer answers (not part of the suite:
# timings; the tests are tests/server/test_server_aravis_health.cpp). Aravis'
# fake camera on 127.0.0.1, one aravis:// Mono8 stream, the demo detector:
#  - ROUNDS times: kill -9 the camera, poll GET /streams/gige every 50 ms
#    until "reconnecting" (the seconds printed), start it again, wait for
#    "running";
#  - then freeze the camera (SIGSTOP) and SIGTERM the server: seconds to
#    exit and the exit code.
# Run it in a private network namespace when other fake cameras may be about
# (GVCP's port is fixed): unshare --net sh -c 'ip link set lo up; tests/bench/camera_timing.sh'
# Usage: tests/bench/camera_timing.sh [rounds=3] [build]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
build=${2:-build}
root=$PWD
port=$((20000 + RANDOM % 20000))
if grep -q " 0100007F:0F74 " /proc/net/udp; then
  echo "camera_timing.sh: something already listens on 127.0.0.1:3956/udp" >&2
  exit 1
fi
dir=$(mktemp -d /tmp/torchinfer-camera-timing-XXXXXX)
camera=""
server=""
cleanup() {
  [ -n "$camera" ] && kill -CONT "$camera" 2> /dev/null && kill "$camera" 2> /dev/null || true
  [ -n "$server" ] && kill -KILL "$server" 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/server.json" << JSON
{"models": [{"id": "parts", "path": "$root/models/demo/parts_detector.pt", "batch_size": 4}],
 "output_dir": "$dir/out",
 "streams": [{"id": "gige", "uri": "aravis://Aravis-Fake-TIMING", "pixel_format": "Mono8"}]}
JSON
state() {
  curl -s "127.0.0.1:$port/streams/gige" | python3 -c \
    'import json, sys; j = json.load(sys.stdin); print(j["state"], j["reconnects"])' 2> /dev/null || true
}
now() { date +%s.%N; }
arv-fake-gv-camera-0.8 -i 127.0.0.1 -s TIMING > /dev/null 2>&1 &
camera=$!
GST_PLUGIN_PATH="$root/$build/plugin" "$root/$build/pipelines/server/torchinfer-server" \
  --config "$dir/server.json" --listen "127.0.0.1:$port" --rtsp-port 0 2> "$dir/server.log" &
server=$!
for round in $(seq "$rounds"); do
  for _ in $(seq 300); do [ "$(state)" = "running $((round - 1))" ] && break; sleep 0.2; done
  sleep 3
  kill -9 "$camera"
  wait "$camera" 2> /dev/null || true
  t0=$(now)
  for _ in $(seq 400); do state | grep -q reconnecting && break; sleep 0.05; done
  echo "round $round: the loss noticed after $(echo "$(now) - $t0" | bc) s"
  arv-fake-gv-camera-0.8 -i 127.0.0.1 -s TIMING > /dev/null 2>&1 &
  camera=$!
done
for _ in $(seq 300); do [ "$(state)" = "running $rounds" ] && break; sleep 0.2; done
sleep 3
kill -STOP "$camera"
t0=$(now)
kill -TERM "$server"
code=0
wait "$server" || code=$?
server=""
echo "SIGTERM with the camera frozen: exit $code after $(echo "$(now) - $t0" | bc) s"
tail -3 "$dir/server.log"
