#!/usr/bin/env bash
# Before/after of a change to the preprocessing: preprocess-bench binaries
# built from the same benchmark source, each linked with its own
# preprocessing, run in rotating order round after round on one core, so
# that the drift of a shared machine falls on every side. Prints, per case,
# the median over the rounds of each binary's CPU time per frame and its
# ratio to the first binary's. Give the first binary twice (a copy under
# another name) to see the noise floor of the same run: its ratio should
# be 1. Not a test: figures vary with load.
# Usage: tests/bench/preprocess_ab.sh [-f filter] [-r rounds] [-t min-time-s] BASE OTHER...
set -euo pipefail
. "$(dirname "$0")/lib.sh"
filter=. rounds=15 min_time=0.2
while getopts f:r:t: opt; do
  case $opt in
    f) filter=$OPTARG ;;
    r) rounds=$OPTARG ;;
    t) min_time=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bins=("$@")
[ ${#bins[@]} -ge 2 ] || { echo "usage: $0 [-f filter] [-r rounds] [-t s] BASE OTHER..." >&2; exit 2; }
echo "$(machine_line); one thread"
echo "command: $0 -f '$filter' -r $rounds -t $min_time ${bins[*]}"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
n=${#bins[@]}
for ((i = 0; i < rounds; ++i)); do
  for ((j = 0; j < n; ++j)); do
    k=$(((i + j) % n))
    OMP_NUM_THREADS=1 taskset -c 0 "${bins[k]}" --benchmark_filter="$filter" \
      --benchmark_min_time="$min_time" --benchmark_format=csv 2>/dev/null |
      awk -F, -v side="$k" '$1 ~ /^"BM_/ { gsub(/"/, "", $1); print side, $1, $4 }' >>"$runs"
  done
done
python3 - "$runs" "$rounds" "${bins[@]}" <<'PY'
import collections, os, statistics, sys
runs, rounds, bins = sys.argv[1], sys.argv[2], sys.argv[3:]
times = collections.defaultdict(list)
for line in open(runs):
    side, case, ms = line.split()
    times[case, int(side)].append(float(ms))
names = [os.path.basename(b) for b in bins]
print(f"median CPU ms per frame over {rounds} rounds; ratio to {names[0]}")
print(f"{'case':<44}" + "".join(f" {n[-24:]:>24}" for n in names))
for case in sorted({c for c, _ in times}):
    base = statistics.median(times[case, 0])
    cells = [f"{base:.4f}"]
    for k in range(1, len(bins)):
        t = statistics.median(times[case, k])
        cells.append(f"{t:.4f} ({t / base:.3f}x)")
    print(f"{case:<44}" + "".join(f" {c:>24}" for c in cells))
PY
