#!/usr/bin/env bash
# Reliability checks of docs/reliability.md (not part of the test suite):
#   asan   ASan + UBSan build of plugin and tests in build-asan/, whole suite
#   tsan   the batcher/queue/registry unit tests under ThreadSanitizer
#   leaks  the element tests under GStreamer's leaks tracer
# Usage: scripts/sanitize.sh [asan|tsan|leaks]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

asan() {
  [ -d build-asan ] || meson setup build-asan -Dbuildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
  ninja -C build-asan
  # gst-launch-1.0 and gst-plugin-scanner are not built with ASan: the
  # runtime must come first in every process that loads the plugin
  # (scripts/sanitizers/preload.sh).
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:suppressions=$root/scripts/sanitizers/asan.supp" \
  LSAN_OPTIONS="suppressions=$root/scripts/sanitizers/lsan.supp:print_suppressions=1:fast_unwind_on_malloc=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/scripts/sanitizers/ubsan.supp" \
    meson test -C build-asan --print-errorlogs --num-processes 1 --timeout-multiplier 4 \
      --wrapper "$root/scripts/sanitizers/preload.sh" unit elements pipelines
}

tsan() {
  mkdir -p build-tsan
  g++ -std=c++17 -O1 -g -fsanitize=thread -Isrc -Itests/common \
    tests/unit/test_batcher.cpp tests/unit/test_batcher_lanes.cpp tests/unit/test_stream_session.cpp \
    src/batching/batcher.cpp src/model/model_registry.cpp src/stream/stream_session.cpp \
    src/engine/engine_thread.cpp \
    src/stream/regions.cpp src/stream/session_fill.cpp src/stream/session_regions.cpp \
    src/preprocess/preprocess.cpp src/preprocess/resample.cpp src/preprocess/bayer.cpp \
    src/preprocess/lattice_rows.cpp src/preprocess/saturation.cpp src/preprocess/write_rows.cpp \
    src/common/stream_stats.cpp src/common/aligned_buffer.cpp src/common/model_config.cpp \
    src/common/model_config_anomaly.cpp \
    src/common/file_check.cpp src/common/json_file.cpp src/common/utf8.cpp \
    -lgtest -lgtest_main -lpthread -o build-tsan/batcher-tsan
  TSAN_OPTIONS="halt_on_error=1" build-tsan/batcher-tsan --gtest_repeat=20 --gtest_brief=1
}

leaks() {
  [ -d build ] || ./scripts/setup.sh
  ninja -C build
  # Same check as the suite's element-leaks test, on its own.
  meson test -C build --print-errorlogs element-leaks
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tsan leaks asan)
for s in "${steps[@]}"; do
  echo "== $s"
  "$s"
done
