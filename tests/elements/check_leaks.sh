#!/usr/bin/env bash
# Runs the element tests under GStreamer's leaks tracer and fails if any
# GstObject or GstMiniObject is still alive at gst_deinit().
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
GST_TRACERS=leaks GST_DEBUG=GST_TRACER:7 GST_DEBUG_NO_COLOR=1 GST_DEBUG_FILE="$log" \
  "$1" --gtest_brief=1 >/dev/null
status=$?
alive=$(grep -c 'object-alive, type-name=(string)[A-Za-z]' "$log")
echo "$alive objects alive after the element tests"
grep 'object-alive, type-name=(string)[A-Za-z]' "$log" | grep -o 'description=(string)[^,]*' | head -20
[ "$status" -eq 0 ] && [ "$alive" -eq 0 ]
