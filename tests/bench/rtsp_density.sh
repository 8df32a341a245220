#!/usr/bin/env bash
# Decode-included density over RTSP (issue 37, item 1; docs/performance.md):
#
#   tests/bench/rtsp_density.sh                      # SSD-MobileNet-v1 int8 + the demo detector, 1080p
#   tests/bench/rtsp_density.sh --models ssd:int8 --ab "max-threads=0,max-threads=1" --ab-n 4
#
# Options: /usr/bin/python3 tests/bench/rtsp_density.py --help. Writes every
# probe to build/bench-rtsp-density.json and the plot to
# docs/images/density-rtsp.png. Needs avdec_h264 and x264enc
# (gstreamer1.0-libav, gstreamer1.0-plugins-ugly: scripts/setup.sh).
# Not a test: figures vary with load (the table records the load).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 tests/bench/rtsp_density.py --plots docs/images "$@"
