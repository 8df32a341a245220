#!/usr/bin/env bash
# Camera density and its compute bound (issue 16, item 1; docs/performance.md):
#
#   tests/bench/density.sh                  # detector fp32 + ResNet-18 int8, batch 1,2,4,8
#   tests/bench/density.sh --models detector:fp32 --batches 4 --duration 5
#
# Options: /usr/bin/python3 tests/bench/density.py --help. Writes every probe to
# build/bench-density.json and the plot to docs/images/density.png.
# Not a test: figures vary with load (the table records the load).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 tests/bench/density.py --plots docs/images "$@"
