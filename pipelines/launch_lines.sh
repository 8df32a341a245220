#!/usr/bin/env bash
# The launch lines of pipelines/README.md, one function each, after building:
#   pipelines/launch_lines.sh LINE     (paths are relative to the repository root)
# LINE: factory_camera from_file tracked counted two_stage rtsp_out rtsp_in rtsp_in_client four_cameras python_app qa_line
#
# Settings (environment):
#   MODEL       detector (default models/demo/parts_detector.pt)
#   CLASSIFIER  classifier of the part crops (default models/demo/defect_classifier.pt)
#   CLIP        clip of the file lines (default models/demo/line.mkv)
#   DEVICES     V4L2 cameras (default "/dev/video0 /dev/video1 /dev/video2 /dev/video3")
#   SIMULATE=1  a live videotestsrc in YUY2 stands in for every camera (tests;
#               no other change to the line)
#   FRAMES      frames per camera, 0 = until stopped (Ctrl-C: -e makes it EOS)
#   SINK        display (default autovideosink; tests use fakesink)
#   OUT         folder of the JSON lines and videos (default out/pipelines)
#   PORT, URL   RTSP server port (0 = any free one), and the stream to analyse
#   BUILD       build folder (default build)
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=${MODEL:-models/demo/parts_detector.pt}
CLASSIFIER=${CLASSIFIER:-models/demo/defect_classifier.pt}
CLIP=${CLIP:-models/demo/line.mkv}
FRAMES=${FRAMES:-0}
SINK=${SINK:-autovideosink}
OUT=${OUT:-out/pipelines}
BUILD=$(realpath "${BUILD:-build}")
read -r -a DEVICES <<<"${DEVICES:-/dev/video0 /dev/video1 /dev/video2 /dev/video3}"
PORT=${PORT:-8554}
URL=${URL:-rtsp://127.0.0.1:$PORT/stream}
export GST_PLUGIN_PATH="$BUILD/plugin${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
mkdir -p "$OUT"

# A YUY2 factory camera at 640x480, 30 fps; $1 = camera index.
camera() {
  local caps="video/x-raw,format=YUY2,width=640,height=480,framerate=30/1" n=${1:-0}
  if [ "${SIMULATE:-0}" = 1 ]; then
    local patterns=(ball smpte snow checkers-8)
    echo "videotestsrc is-live=true pattern=${patterns[$n]} num-buffers=$((FRAMES > 0 ? FRAMES : -1)) ! $caps"
  else
    echo "v4l2src device=${DEVICES[$n]} num-buffers=$((FRAMES > 0 ? FRAMES : -1)) ! $caps"
  fi
}

# The clip decoded and converted to YUY2, as the camera would send it.
clip() {
  echo "filesrc location=$CLIP ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2"
}

# Camera -> detector -> boxes drawn in YUY2 -> screen; results as JSON lines.
factory_camera() {
  # shellcheck disable=SC2046
  gst-launch-1.0 -e $(camera 0) ! torchinfer model="$MODEL" ! torchnms ! \
    torchmetaconvert location="$OUT/camera.jsonl" ! torchoverlay show-hud=true ! \
    videoconvert ! "$SINK"
}

# File in, annotated file out (4 frames per forward()).
from_file() {
  # shellcheck disable=SC2046
  gst-launch-1.0 -e $(clip) ! torchinfer model="$MODEL" batch-size=4 ! torchnms ! \
    torchmetaconvert location="$OUT/file.jsonl" ! torchoverlay ! videoconvert ! \
    jpegenc ! matroskamux ! filesink location="$OUT/file_annotated.mkv"
}

# File in, each object with its id across frames (torchtrack): boxes drawn
# "#id label", predicted ones (frames not inferred) dashed; ids in the JSON.
tracked() {
  # shellcheck disable=SC2046
  gst-launch-1.0 -e $(clip) ! torchinfer model="$MODEL" inference-interval=3 ! torchnms ! \
    torchtrack ! torchmetaconvert location="$OUT/tracked.jsonl" ! torchoverlay ! videoconvert ! \
    "$SINK"
}

# Counting at a gate: each part (bracket or washer: not the detector's
# defect boxes) crossing x = 320 (its box centre) counted once, by class,
# forward (the belt runs left to right; the gate is drawn bottom-up); the
# gate, its counts and each box's id drawn.
counted() {
  # shellcheck disable=SC2046
  gst-launch-1.0 -e $(clip) ! torchinfer model="$MODEL" inference-interval=3 ! torchnms ! \
    torchtrack ! torchanalytics reference-point=center lines="gate:320,480,320,0" \
    classes=bracket,washer ! \
    torchmetaconvert location="$OUT/counted.jsonl" ! torchoverlay ! videoconvert ! "$SINK"
}

# Two stages: the detector finds the parts, torchtrack gives each an id, a
# classifier judges each part's crop (padded by 10 %); "classification" on
# each part box in the JSON.
two_stage() {
  # shellcheck disable=SC2046
  gst-launch-1.0 -e $(clip) ! torchinfer model="$MODEL" ! torchnms ! torchtrack ! \
    torchinfer model="$CLASSIFIER" model-instance-id=parts inference-region=roi-list \
    object-class=bracket,washer object-padding=0.1 ! \
    torchmetaconvert location="$OUT/two_stage.jsonl" ! torchoverlay ! videoconvert ! "$SINK"
}

# RTSP out: the annotated camera as H.264 on rtsp://127.0.0.1:$PORT/stream.
rtsp_out() {
  exec "$BUILD/pipelines/torchinfer-rtsp-server" --port "$PORT" --pipeline \
    "$(camera 0) ! torchinfer model=$MODEL ! torchnms ! torchoverlay ! videoconvert ! \
     video/x-raw,format=I420 ! openh264enc gop-size=15 ! rtph264pay name=pay0 pt=96 config-interval=-1"
}

# RTSP in with plain gst-launch (no reconnect; FRAMES > 0 stops after that many).
rtsp_in() {
  local stop=""
  # identity ends the stream instead of passing its Nth buffer
  [ "$FRAMES" -gt 0 ] && stop="identity eos-after=$((FRAMES + 1)) !"
  # shellcheck disable=SC2086
  gst-launch-1.0 -e rtspsrc location="$URL" protocols=tcp latency=200 ! rtph264depay ! \
    h264parse ! openh264dec ! $stop videoconvert ! torchinfer model="$MODEL" ! torchnms ! \
    torchmetaconvert location="$OUT/rtsp.jsonl" ! fakesink
}

# RTSP in with the reconnecting client (docs/rtsp.md).
rtsp_in_client() {
  "$BUILD/pipelines/torchinfer-rtsp-client" --url "$URL" --model "$MODEL" --nms \
    --max-frames "$FRAMES" --output "$OUT/rtsp_client.jsonl"
}

# Four cameras, one loaded model: their frames share batches of 4.
four_cameras() {
  local line="" n
  for n in 0 1 2 3; do
    line+=" $(camera $n) ! torchinfer model=$MODEL model-instance-id=line batch-size=4 ! torchnms !"
    line+=" torchmetaconvert location=$OUT/cam$n.jsonl ! fakesink"
  done
  # shellcheck disable=SC2086
  gst-launch-1.0 -e $line
}

# A Python (GI) application reading the detections of the clip.
python_app() {
  /usr/bin/python3 pipelines/read_detections.py "$MODEL" "$(clip)"
}

# The QA station on the clip: one JSON decision per part, counts at the end.
qa_line() {
  "$BUILD/pipelines/torchinfer-qa-line" --model "$MODEL" --classifier "$CLASSIFIER" --clip "$CLIP" \
    --output "$OUT/decisions.jsonl"
}

case "${1:-}" in
  factory_camera | from_file | tracked | counted | two_stage | rtsp_out | rtsp_in | rtsp_in_client | four_cameras | python_app | qa_line)
    "$1" ;;
  *)
    sed -n '2,4p' "$0" >&2
    exit 2 ;;
esac
