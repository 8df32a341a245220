#!/usr/bin/env bash
# A GigE Vision camera analysed in the dashboard, with no camera: starts
# Aravis' fake camera (arv-fake-gv-camera-0.8, the real GVCP/GVSP protocol
# on 127.0.0.1) and torchinfer-server with it as aravis://Aravis-Fake-DEMO,
# Bayer frames straight into the demo detector. Open the printed URL: the
# camera's snapshot (demosaicked when shown), detections, frames received
# and lost. Ctrl-C stops both; the fake camera is killed on any exit.
# The detections mean nothing: the fake camera's test pattern (a moving
# ramp) is nothing like the parts the demo detector knows, and it still
# finds ~100 boxes a frame. This shows the camera path, not detection
# quality (docs/machine-vision.md).
#
# Settings from the environment: PORT (8080), PIXEL_FORMAT (BayerRG8; or
# Mono8, Mono16, BayerBG8, ..., or Mono10/Mono12: the fake camera's Mono16
# under that name, its ramp kept within 10/12 bits by the exposure),
# TRIGGER (free-run, or software: a Trigger button on the card), LOST (GVSP
# packets the camera drops per thousand, 0; 2 loses ~30 % of the frames:
# degraded; 50 all: stalled), BUILD (build).
# See docs/machine-vision.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8080}
PIXEL_FORMAT=${PIXEL_FORMAT:-BayerRG8}
TRIGGER=${TRIGGER:-free-run}
LOST=${LOST:-0}
BUILD=${BUILD:-build}
SERIAL=DEMO

if ! command -v arv-fake-gv-camera-0.8 > /dev/null; then
  echo "fake_camera.sh: arv-fake-gv-camera-0.8 is missing: run scripts/setup.sh (aravis-tools)" >&2
  exit 1
fi
# GVCP's port is fixed: one GigE Vision camera per address.
if grep -q " 0100007F:0F74 " /proc/net/udp; then
  echo "fake_camera.sh: something already listens on 127.0.0.1:3956/udp (another fake camera?)" >&2
  exit 1
fi
[ -x "$BUILD/pipelines/server/torchinfer-server" ] || ./scripts/setup.sh >&2

dir=$(mktemp -d /tmp/torchinfer-fake-camera-XXXXXX)
camera=""
server=""
# The server first (SIGTERM: it drains and exits), then the camera.
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2> /dev/null && wait "$server" 2> /dev/null || true
  [ -n "$camera" ] && kill "$camera" 2> /dev/null && wait "$camera" 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

args=(-i 127.0.0.1 -s "$SERIAL")
[ "$LOST" != 0 ] && args+=(-r "$LOST")
exposure=""
case "$PIXEL_FORMAT" in
  Mono10 | Mono12)
    # Aravis' fake camera has no 10/12-bit pattern: its own GenICam XML with
    # the Mono16 entry named $PIXEL_FORMAT (the same 16-bit words), and an
    # exposure that scales its ramp (0..65535 times 1 + log10(exposure /
    # 10000)) into 10 or 12 bits: 1036 us -> at most 1006, 1154 us -> 4077.
    arv-fake-gv-camera-0.8 "${args[@]}" > /dev/null 2>&1 &
    camera=$!
    sleep 1
    arv-tool-0.8 -n "Aravis-Fake-$SERIAL" genicam |
      sed "s/<EnumEntry Name=\"Mono16\"/<EnumEntry Name=\"$PIXEL_FORMAT\"/" > "$dir/genicam.xml"
    kill "$camera" && wait "$camera" 2> /dev/null || true
    args+=(-g "$dir/genicam.xml")
    exposure=", \"exposure_us\": $([ "$PIXEL_FORMAT" = Mono10 ] && echo 1036 || echo 1154)"
    ;;
esac
arv-fake-gv-camera-0.8 "${args[@]}" &
camera=$!

cat > "$dir/server.json" << JSON
{
  "models": [{"id": "parts", "path": "$PWD/models/demo/parts_detector.pt", "batch_size": 4}],
  "output_dir": "$dir/out",
  "streams": [{"id": "gige", "uri": "aravis://Aravis-Fake-$SERIAL",
               "pixel_format": "$PIXEL_FORMAT", "trigger": "$TRIGGER"$exposure}]
}
JSON
echo "fake_camera.sh: camera Aravis-Fake-$SERIAL ($PIXEL_FORMAT, $TRIGGER) on 127.0.0.1;" \
  "dashboard on http://127.0.0.1:$PORT/ — Ctrl-C to stop" >&2
echo "fake_camera.sh: the detections on its test pattern mean nothing (~100 boxes a frame):" \
  "this shows the camera path, not the detector" >&2
# In the background, so a signal to this script reaches the trap at once.
GST_PLUGIN_PATH="$PWD/$BUILD/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}" \
  "$BUILD/pipelines/server/torchinfer-server" --config "$dir/server.json" \
  --listen "127.0.0.1:$PORT" --rtsp-port 0 &
server=$!
wait "$server"
