#!/usr/bin/env bash
# How long stopping and recovering take, as figures (issue 32, item 5): the
# tests that exercise them only check order and counts, since a busy
# machine stretches any wall-clock bound. Runs them --reps times through
# meson (its test environment) and prints, per figure, the median and the
# highest of the "[ measured ]" lines they print:
#   flush during inference, NULL during inference, teardown after
#   state-change stress (element-tests, slow_identity.pt: ~0.25 s a call);
#   kill -9 of the RTSP server to 10 new results, the watchdog's reported
#   stall with --stall-timeout 2 (rtsp-tests).
#   tests/bench/stop_latency.sh [--reps 5] [--build build]
# Not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
reps=5 build=build
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --build) build=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
meson test -C "$build" -v elements --test-args \
  "--gtest_filter=TorchInferBatching.Flush*:TorchInferBatching.NullDuring*:TorchInferBatching.SurvivesStateChange* --gtest_repeat=$reps" \
  >>"$log" 2>&1 || { echo "element-tests failed:"; tail -30 "$log"; exit 1; }
meson test -C "$build" -v rtsp --test-args \
  "--gtest_filter=Rtsp.ServerKilled*:Rtsp.FrozenServer* --gtest_repeat=$reps" \
  >>"$log" 2>&1 || { echo "rtsp-tests failed:"; tail -30 "$log"; exit 1; }
machine_line
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -o '\[ measured \] [^:]*' "$log" | sed 's/\[ measured \] //' | sort -u | while read -r what; do
  values=$(grep -F "[ measured ] $what:" "$log" | sed 's/.*: \([0-9.e+-]*\) s.*/\1/')
  printf '%-40s median %6.3f s, max %6.3f s (%d runs)\n' "$what" \
    "$(echo "$values" | median)" "$(echo "$values" | sort -g | tail -1)" "$(echo "$values" | wc -l)"
done
