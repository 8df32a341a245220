#!/usr/bin/env bash
# Density: N cameras (the demo clip looped, paced at its 30 fps) through one
# torchinfer-server (one model, batches shared across cameras) vs the same
# N cameras as N separate torchinfer-server processes with one camera each
# (N model copies, no shared batches). Over DURATION seconds once every
# camera runs: CPU ms per inferred frame (process CPU / frames inferred),
# frames inferred per second, and resident memory, from each process's
# /metrics. Not part of the suite.
# Usage: tests/bench/server_density.sh [cameras] [seconds] [build]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-4}
duration=${2:-30}
build=${3:-build}
root=$PWD
export GST_PLUGIN_PATH=$root/$build/plugin
work=$(mktemp -d /tmp/server-density-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
clip=file://$root/models/demo/line.mkv
model=$root/models/demo/parts_detector.pt
echo "command: $0 $n $duration $build"

start_server() {  # log name, cameras
  local log=$work/$1.log cams=$2 args=()
  for _ in $(seq 1 "$cams"); do args+=(--stream "$clip"); done
  "$build/pipelines/server/torchinfer-server" --model "$model" --listen 127.0.0.1:0 \
    --output-dir "$work/out-$1" "${args[@]}" 2> "$log" &
  pids+=($!)
}
url_of() {
  until grep -q "serving http" "$work/$1.log"; do sleep 0.2; done
  sed -n 's|.*serving \(http://[^/]*\)/.*|\1|p' "$work/$1.log"
}
wait_running() {  # url, cameras
  until [ "$(curl -s "$1/streams" | jq '[.streams[] | select(.frames.out > 0)] | length')" = "$2" ]; do
    sleep 0.5
  done
}
# cpu_seconds frames_inferred rss_bytes of one server
sample() {
  curl -s "$1/metrics" | awk '
    $1 == "process_cpu_seconds_total" {c = $2}
    $1 == "process_resident_memory_bytes" {r = $2}
    $1 ~ /^torchinfer_stream_frames_inferred_total/ {f += $2}
    END {printf "%s %d %d\n", c, f, r}'
}
measure() {  # label, urls...
  local label=$1; shift
  local c0=0 f0=0 c1=0 f1=0 rss=0
  for u in "$@"; do read -r c f r <<< "$(sample "$u")"; c0=$(echo "$c0 + $c" | bc); f0=$((f0 + f)); done
  sleep "$duration"
  for u in "$@"; do
    read -r c f r <<< "$(sample "$u")"
    c1=$(echo "$c1 + $c" | bc); f1=$((f1 + f)); rss=$((rss + r))
  done
  local frames=$((f1 - f0))
  printf "%-28s %8.1f frames/s  %7.2f CPU ms/frame  %6.0f MB RSS\n" "$label" \
    "$(echo "scale=2; $frames / $duration" | bc)" "$(echo "scale=4; ($c1 - $c0) * 1000 / $frames" | bc)" \
    "$(echo "$rss / 1048576" | bc)"
}

start_server one "$n"
u=$(url_of one)
wait_running "$u" "$n"
sleep 5  # past warm-up
measure "1 server, $n cameras" "$u"
kill "${pids[0]}"; wait "${pids[0]}" || true
pids=()

urls=()
for i in $(seq 1 "$n"); do start_server "p$i" 1; done
for i in $(seq 1 "$n"); do urls+=("$(url_of "p$i")"); done
for x in "${urls[@]}"; do wait_running "$x" 1; done
sleep 5
measure "$n processes, 1 camera each" "${urls[@]}"
