#!/usr/bin/env bash
# A GigE Vision camera through torchinfer-server, over the real protocol
# (not part of the suite; the tests are tests/server/test_server_aravis.cpp):
# Aravis' fake camera on 127.0.0.1 at its own full rate (AcquisitionFrameRate,
# 25/s) with LOST of every 1000 GVSP packets dropped (--gvsp-lost-ratio), one
# aravis:// stream into the demo detector. Over SECONDS of steady state:
#  - frames the camera sent (last frame id - first + 1), received whole,
#    inferred; frames lost by reason;
#  - the server's lost count (from frame ids) against Aravis' own statistics
#    (failures = incomplete frames; its "missing frames" counts gaps, each of
#    one frame or more);
#  - the measured frame loss against the injected one: a frame of P packets
#    survives a packet loss ratio r with probability (1 - r)^P;
#  - CPU per frame of the server process (/proc/<pid>/stat utime + stime).
# Exits 1 if they disagree. Usage:
#   tests/bench/fake_gige.sh [seconds=60] [lost_per_thousand=2] [pixel_format=BayerRG8] [build]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/lib.sh
seconds=${1:-60}
lost=${2:-2}
format=${3:-BayerRG8}
build=${4:-build}
root=$PWD
port=$((20000 + RANDOM % 20000))
export GST_PLUGIN_PATH=$root/$build/plugin
if grep -q " 0100007F:0F74 " /proc/net/udp; then
  echo "fake_gige.sh: something already listens on 127.0.0.1:3956/udp" >&2
  exit 1
fi
work=$(mktemp -d /tmp/fake-gige-XXXXXX)
camera=""
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2> /dev/null && wait "$server" 2> /dev/null || true
  [ -n "$camera" ] && kill "$camera" 2> /dev/null && wait "$camera" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
arv-fake-gv-camera-0.8 -i 127.0.0.1 -s BENCH -r "$lost" > "$work/camera.log" 2>&1 &
camera=$!
cat > "$work/server.json" << JSON
{"models": [{"id": "parts", "path": "$root/models/demo/parts_detector.pt", "batch_size": 4}],
 "output_dir": "$work/out",
 "streams": [{"id": "gige", "uri": "aravis://Aravis-Fake-BENCH", "pixel_format": "$format"}]}
JSON
"$build/pipelines/server/torchinfer-server" --config "$work/server.json" \
  --listen "127.0.0.1:$port" --rtsp-port 0 2> "$work/server.log" &
server=$!
url=http://127.0.0.1:$port/streams/gige
for _ in $(seq 120); do
  [ "$(curl -sf "$url" | jq -r '.frames.inferred // 0')" -gt 25 ] 2> /dev/null && break
  sleep 1
done
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$server/stat"; }
a=$(curl -sf "$url")
c0=$(cpu)
sleep "$seconds"
b=$(curl -sf "$url")
c1=$(cpu)
d() { echo $(($(jq "$1" <<< "$b") - $(jq "$1" <<< "$a"))); }
received=$(d .camera.frames.received)
incomplete=$(d .camera.frames.incomplete)
missing=$(d .camera.frames.missing)
overflow=$(d .camera.frames.overflow)
inferred=$(d .frames.inferred)
skipped=$(d .frames.skipped)
dropped=$(d .frames.dropped)
failures=$(d .camera.aravis.failures)
aravis_missing=$(d .camera.aravis.missing_frames)
underruns=$(d .camera.aravis.underruns)
packets_missing=$(d .camera.packets.missing)
sent=$((received + incomplete + missing))
lost_server=$((incomplete + missing))

# Packets per frame: a GVSP packet of packet_size bytes carries packet_size
# - 36 of image (IP 20 + UDP 8 + GVSP 8 bytes of headers), plus leader and trailer.
payload=$(jq '.camera.width * .camera.height * (if .camera.pixel_format | test("16") then 2 else 1 end)' <<< "$b")
packets=$(((payload + 1464 - 1) / 1464 + 2))
machine_line
echo "fake GigE camera ($format $(jq -r '"\(.camera.width)x\(.camera.height)"' <<< "$b"), $seconds s," \
  "--gvsp-lost-ratio $lost/1000, $packets packets per frame"
echo "frames sent (ids) $sent = received $received + incomplete $incomplete + missing $missing;" \
  "inferred $inferred, skipped $skipped (model busy), dropped $dropped; overflow $overflow"
awk -v s="$sent" -v r="$received" -v i="$inferred" -v t="$seconds" -v c0="$c0" -v c1="$c1" \
  'BEGIN {c = c1 - c0; printf "rate: %.2f frames/s sent, %.2f received, %.2f inferred; CPU %.1f ms per frame received (%.0f %% of one core)\n", s/t, r/t, i/t, 1000*c/(r>0?r:1), 100*c/t}'
# Aravis counts as missing every packet of an incomplete frame it did not
# have at the frame's timeout, not only those the camera left out.
awk -v l="$lost_server" -v s="$sent" -v r="$lost" -v p="$packets" -v pm="$packets_missing" \
  'BEGIN {printf "lost frames: %d of %d (%.1f %%); injected: 1-(1-%g)^%d = %.1f %%; packets missing (Aravis) %d\n", l, s, 100*l/s, r/1000, p, 100*(1-(1-r/1000)^p), pm}'
# Aravis counts each gap in the frame ids once ("missing frames"), however
# many frames it spans; its failures are the incomplete frames.
echo "server: incomplete $incomplete, missing $missing (frame ids); Aravis: failures $failures," \
  "gaps $aravis_missing, underruns $underruns"
[ "$incomplete" -eq "$failures" ] && [ "$missing" -ge "$aravis_missing" ] &&
  [ $((missing > 0)) -eq $((aravis_missing > 0)) ] ||
  { echo "FAIL: the server's lost frames disagree with Aravis' statistics" >&2; exit 1; }
