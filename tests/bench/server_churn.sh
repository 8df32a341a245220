#!/usr/bin/env bash
# torchinfer-server churn and REST figures (not part of the suite; the short
# churn test is tests/server/test_server_churn.cpp):
#  1. CYCLES add/remove cycles of one camera while 3 others run (the demo
#     clip looped): the 3 lose no frame (torchinfer's dropped = 0 and their
#     JSON files' PTS run on without a gap), and RSS and open descriptors
#     after the churn are within 5 % of their level before it (measured
#     after WARMUP cycles, once thread pools and caches exist).
#  2. GET /streams latency, p50/p99 over REQUESTS calls, while they run.
#  3. promtool check metrics on /metrics.
# Exits 1 if a check fails. Usage: tests/bench/server_churn.sh [cycles] [build]
set -euo pipefail
cd "$(dirname "$0")/../.."
cycles=${1:-200}
build=${2:-build}
warmup=5
requests=1000
root=$PWD
export GST_PLUGIN_PATH=$root/$build/plugin
work=$(mktemp -d /tmp/server-churn-XXXXXX)
clip=file://$root/models/demo/line.mkv
cat > "$work/server.json" <<JSON
{"models": [{"id": "parts", "path": "$root/models/demo/parts_detector.pt", "batch_size": 4}],
 "output_dir": "$work/out",
 "streams": [{"id": "cam0", "uri": "$clip"}, {"id": "cam1", "uri": "$clip"},
             {"id": "cam2", "uri": "$clip"}]}
JSON
"$build/pipelines/server/torchinfer-server" --config "$work/server.json" --listen 127.0.0.1:0 \
  2> "$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
echo "command: $0 $cycles $build"

until grep -q "serving http" "$work/server.log"; do
  kill -0 $pid || { cat "$work/server.log"; exit 1; }
  sleep 0.2
done
url=$(sed -n 's|.*serving \(http://[^/]*\)/.*|\1|p' "$work/server.log")
until [ "$(curl -s "$url/streams" | jq '[.streams[] | select(.frames.out > 0)] | length')" = 3 ]; do
  sleep 0.5
done

metric() { curl -s "$url/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
cycle() {
  local id=$1
  curl -sf -o /dev/null -X POST "$url/streams" -d "{\"id\": \"$id\", \"uri\": \"$clip\"}"
  until [ "$(curl -s "$url/streams/$id" | jq '.frames.out')" -ge 3 ] 2>/dev/null; do sleep 0.1; done
  curl -sf -o /dev/null -X DELETE "$url/streams/$id"
}
settle() {
  until [ "$(metric torchinfer_streams_stopping)" = 0 ]; do sleep 0.2; done
  sleep 1
}

for i in $(seq 1 $warmup); do cycle "warm$i"; done
settle
rss0=$(metric process_resident_memory_bytes)
fds0=$(metric process_open_fds)
thr0=$(metric process_threads)
start=$(date +%s.%N)
for i in $(seq 1 "$cycles"); do cycle "churn$i"; done
settle
secs=$(echo "$(date +%s.%N) - $start" | bc)
rss1=$(metric process_resident_memory_bytes)
fds1=$(metric process_open_fds)
thr1=$(metric process_threads)

# REST latency while the 3 cameras run.
for i in $(seq 1 $requests); do
  curl -s -o /dev/null -w '%{time_total}\n' "$url/streams"
done | sort -n > "$work/latency.txt"
p50=$(awk -v n=$requests 'NR == int(n * 0.50) {printf "%.2f", $1 * 1000}' "$work/latency.txt")
p99=$(awk -v n=$requests 'NR == int(n * 0.99) {printf "%.2f", $1 * 1000}' "$work/latency.txt")

curl -s "$url/metrics" > "$work/metrics.txt"
promtool_out=$(promtool check metrics < "$work/metrics.txt" 2>&1) && promtool_rc=0 || promtool_rc=$?
dropped=$(curl -s "$url/streams" | jq '[.streams[].frames.dropped] | add')

kill -TERM $pid
wait $pid && rc=0 || rc=$?
# A frame lost anywhere breaks the PTS sequence (33-34 ms steps, 0 after the clip's last frame).
gaps=0
for cam in cam0 cam1 cam2; do
  n=$(jq -r '.pts' "$work/out/$cam.jsonl" | awk 'NR > 1 { d = $1 - p; if (!((d >= 32000000 && d <= 35000000) || ($1 == 0 && p >= 9900000000))) bad++ } { p = $1 } END { print bad + 0 }')
  lines=$(wc -l < "$work/out/$cam.jsonl")
  echo "$cam: $lines frames in its JSON file, $n PTS gaps"
  gaps=$((gaps + n))
done

pct() { echo "scale=2; ($2 - $1) * 100 / $1" | bc; }
echo "cycles: $cycles in ${secs} s ($(echo "scale=2; $secs / $cycles" | bc) s per add+first frames+remove)"
echo "rss: $rss0 -> $rss1 bytes ($(pct "$rss0" "$rss1") %)"
echo "open fds: $fds0 -> $fds1 ($(pct "$fds0" "$fds1") %)"
echo "threads: $thr0 -> $thr1"
echo "frames dropped by the 3 running cameras: $dropped"
echo "GET /streams latency over $requests calls: p50 $p50 ms, p99 $p99 ms"
echo "promtool check metrics: exit $promtool_rc ${promtool_out:+($promtool_out)}"
echo "server exit after SIGTERM: $rc"

ok=1
within() { [ "$(echo "d = ($2 - $1) / $1; if (d < 0) d = -d; d <= 0.05" | bc -l)" = 1 ]; }
within "$rss0" "$rss1" || { echo "FAIL: RSS moved more than 5 %"; ok=0; }
within "$fds0" "$fds1" || { echo "FAIL: open descriptors moved more than 5 %"; ok=0; }
[ "$dropped" = 0 ] || { echo "FAIL: running cameras dropped frames"; ok=0; }
[ "$gaps" = 0 ] || { echo "FAIL: frames lost in the running cameras' files"; ok=0; }
[ "$promtool_rc" = 0 ] && [ -z "$promtool_out" ] || { echo "FAIL: promtool"; ok=0; }
[ "$rc" = 0 ] || { echo "FAIL: exit code"; ok=0; }
[ $ok = 1 ] && echo "PASS" || exit 1
