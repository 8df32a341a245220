#!/bin/sh
# Decision -> coil write latency (p50/p99) on 127.0.0.1 against the pymodbus
# PLC (tests/bench/line_sim_plc.py), and the streaming thread's cost per
# part (QaPlc::see + decided, the call torchinfer-qa-line and the server's
# cameras make), ROUNDS rounds alternating, medians of the rounds
# (docs/line-io.md, "Figures").
#
#   tests/bench/plc_latency.sh [BUILD_DIR] [ROUNDS] [PULSES]
set -eu
build=${1:-build}
rounds=${2:-3}
pulses=${3:-300}
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/tests/bench/plc-latency-bench
work=$(mktemp -d /tmp/plc-latency-XXXXXX)
trap 'kill $plc 2>/dev/null || true; rm -rf "$work"' EXIT
plc=
start_plc() {
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkfifo "$work/ready.$1"
  /usr/bin/python3 "$here/line_sim_plc.py" --port "$port" --speed 1000 --lead-ms 0 \
    --record "$work/$1.jsonl" --params "$work/$1.params.json" > "$work/ready.$1" &
  plc=$!
  read -r line < "$work/ready.$1"
}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); load: $(uptime | sed 's/.*load average: //')"
for r in $(seq 1 "$rounds"); do
  start_plc "lat$r"
  "$bench" latency "$port" "$pulses" "$work/lat$r.json"
  kill "$plc"; wait "$plc" 2>/dev/null || true
  start_plc "cost$r"
  "$bench" cost "$port" 2000 > "$work/cost$r.json"
  kill "$plc"; wait "$plc" 2>/dev/null || true
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
lat, cost = [], []
for r in range(1, rounds + 1):
    handed = json.load(open(f"{work}/lat{r}.json"))
    recs = [json.loads(l) for l in open(f"{work}/lat{r}.jsonl")]
    if len(recs) != len(handed["handed_ns"]) or handed["merged"] or handed["write_failures"]:
        sys.exit(f"round {r}: {len(recs)} coil edges for {len(handed['handed_ns'])} pulses: {handed}")
    ms = sorted((rec["t_ns"] - t) / 1e6 for rec, t in zip(recs, handed["handed_ns"]))
    p50, p99 = ms[len(ms) // 2], ms[len(ms) * 99 // 100]
    c = json.load(open(f"{work}/cost{r}.json"))
    print(f"round {r}: decision -> coil p50 {p50:.3f} ms p99 {p99:.3f} ms max {ms[-1]:.3f} ms "
          f"({len(ms)} pulses); streaming call p50 {c['p50_ns'] / 1e3:.1f} us "
          f"p99 {c['p99_ns'] / 1e3:.1f} us ({c['parts']} parts, {c['queue_overflow']} refused)")
    lat.append((p50, p99)); cost.append((c["p50_ns"], c["p99_ns"]))
m = statistics.median
print(f"median of {rounds} rounds: decision -> coil p50 {m(l[0] for l in lat):.3f} ms, "
      f"p99 {m(l[1] for l in lat):.3f} ms; streaming call per part p50 "
      f"{m(c[0] for c in cost) / 1e3:.1f} us, p99 {m(c[1] for c in cost) / 1e3:.1f} us")
PY
echo "load after: $(uptime | sed 's/.*load average: //')"
