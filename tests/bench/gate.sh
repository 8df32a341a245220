#!/usr/bin/env bash
# The motion gate's figure (issue 37 item 3; docs/tuning.md): cameras per core,
# detection recall and line count error with inference-gate=motion vs none on
# a rendered belt clip busy about 30 % of the time.
#
#   tests/bench/gate.sh                       # 3 alternated rounds, the MJPEG clip
#   tests/bench/gate.sh --raw                 # raw YUY2 frames, as a camera sends them
#   tests/bench/gate.sh --source both --rounds 7             # both, side by side
#   tests/bench/gate.sh --rounds 5 --gate-props "motion-threshold=6"
#   tests/bench/gate.sh --raw --extra-gate motion-hold=1     # one more gate variant
#
# Options: /usr/bin/python3 tests/bench/gate_bench.py --help. The clip is
# rendered into build/bench-gate on first use (about 2.5 min), and for --raw
# decoded once to a raw YUY2 file there (590 MB). Not a test:
# figures vary with load (the table records it).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 tests/bench/gate_bench.py "$@"
