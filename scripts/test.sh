#!/usr/bin/env bash
# The full test suite: set up, build, run every test (unit, element,
# pipeline). Meson's logs land in build/meson-logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
meson test -C build --print-errorlogs --num-processes 2 "$@"
