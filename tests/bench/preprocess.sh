#!/usr/bin/env bash
# Preprocessing benchmark: fused vs OpenCV reference chain vs memcpy of the
# source frame, one thread, medians of repeated runs, ratios per case.
# Usage: tests/bench/preprocess.sh [build-dir] [repetitions]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build=${1:-build}
reps=${2:-9}
bin="$build/tests/bench/preprocess-bench"
[ -x "$bin" ] || { echo "build first: ninja -C $build" >&2; exit 1; }
echo "$(machine_line); one thread"
echo "command: $bin --benchmark_repetitions=$reps --benchmark_report_aggregates_only=true"
OMP_NUM_THREADS=1 taskset -c 0 "$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=csv 2>/dev/null |
  awk -F, '/_median"/ {
      full = $1; gsub(/"/, "", full); split(full, a, "/"); kind = a[1]; sub(/^BM_/, "", kind);
      name = a[2]; sub(/_median$/, "", name); t[name, kind] = $3; names[name] = 1 }
    END {
      printf "%-34s %10s %10s %10s %12s %12s\n", "case (median ms)", "memcpy", "reference", "fused", "ref/fused", "fused/memcpy";
      for (n in names) printf "%-34s %10.3f %10.3f %10.3f %11.1fx %11.2fx\n", n, t[n,"Memcpy"], t[n,"Reference"], t[n,"Fused"], t[n,"Reference"]/t[n,"Fused"], t[n,"Fused"]/t[n,"Memcpy"] }'
