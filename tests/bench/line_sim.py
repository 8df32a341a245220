#!/usr/bin/python3
"""The line simulator (docs/line-io.md, "Simulator"): starts the PLC
(line_sim_plc.py, pymodbus) on 127.0.0.1, runs the app side
(line-sim-driver: the core's scheduler and Modbus output, and a fixed-delay
rule beside it), then matches every recorded pulse to the part truly in
front of the ejector. Per rule: missed and extra rejects (and pass pulses),
late parts, pulse position error in encoder counts (max |error|, p99).

--check (the CI test): exits 1 unless the synchronised rule has 0 missed,
0 extra, 0 late, every pulse within +-2 counts, and nothing was lost.
"""
import argparse
import bisect
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def belt_count(params):
    v0, t0, comps = params["v0"], params["t0_ns"], params["components"]

    def count(t_ns):
        t = (t_ns - t0) * 1e-9
        return v0 * t + sum(v0 * c / w * (math.sin(w * t + p) - math.sin(p)) for c, w, p in comps)
    return count


def p99(values):
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(math.ceil(0.99 * len(s))) - 1)]


def match(pulses, parts, window):
    """pulses: [(act_count, is_reject)]; parts: [(target, bad)] sorted."""
    targets = [t for t, _ in parts]
    got = {True: set(), False: set()}
    extra = {True: 0, False: 0}
    errors = []
    for act, is_reject in pulses:
        i = bisect.bisect_left(targets, act)
        near = min((j for j in (i - 1, i) if 0 <= j < len(parts)),
                   key=lambda j: abs(targets[j] - act), default=None)
        if (near is None or abs(targets[near] - act) > window or parts[near][1] != is_reject
                or near in got[is_reject]):
            extra[is_reject] += 1
            continue
        got[is_reject].add(near)
        errors.append(act - targets[near])
    bad = sum(1 for _, b in parts if b)
    return {"missed_rejects": bad - len(got[True]), "extra_rejects": extra[True],
            "missed_passes": len(parts) - bad - len(got[False]), "extra_passes": extra[False],
            "pulses": len(pulses),
            "max_abs_error": max((abs(e) for e in errors), default=0.0),
            "p99_abs_error": p99([abs(e) for e in errors]),
            "beyond_2_counts": sum(1 for e in errors if abs(e) > 2),
            "mean_error": sum(errors) / len(errors) if errors else 0.0,
            "min_error": min(errors, default=0.0), "max_error": max(errors, default=0.0)}


def analyse(work, summary, args):
    with open(os.path.join(work, "params.json"), encoding="utf-8") as f:
        count = belt_count(json.load(f))
    parts = [json.loads(l) for l in open(os.path.join(work, "parts.jsonl"), encoding="utf-8")]
    records = [json.loads(l) for l in open(os.path.join(work, "pulses.jsonl"), encoding="utf-8")]
    truth = sorted((count(p["frame_ns"]) - p["offset"] + args.distance, p["bad"]) for p in parts)
    window = args.spacing_min / 2
    sync = [(r["act_count"], r["coil"] == 0) for r in records if r["coil"] in (0, 1)]
    fixed = [(r["act_count"], r["coil"] == 2) for r in records if r["coil"] in (2, 3)]
    out = {"parts": len(parts), "bad": sum(1 for _, b in truth if b),
           "sync": match(sync, truth, window), "fixed": match(fixed, truth, window)}
    out["sync"]["late"] = summary["late"]
    out["fixed"]["late"] = summary["fixed_late"]
    out["driver"] = summary
    return out


def run(args, work):
    port = free_port()
    plc_cmd = [sys.executable, os.path.join(HERE, "line_sim_plc.py"), "--port", str(port),
               "--speed", str(args.speed), "--seed", str(args.seed), "--lead-ms", str(args.lead_ms),
               "--record", os.path.join(work, "pulses.jsonl"),
               "--params", os.path.join(work, "params.json")]
    if args.mode == "queue":
        plc_cmd += ["--queue-base", "100", "--queue-slots", "16"]
    if args.plc_rt:
        # A PLC is a real-time device: a busy PC does not delay its scan.
        plc_cmd = ["chrt", "-f", str(args.plc_rt)] + plc_cmd
    plc = subprocess.Popen(plc_cmd, stdout=subprocess.PIPE, text=True)
    try:
        if plc.stdout.readline().strip() != "listening":
            sys.exit("line_sim: the PLC did not start")
        drv = [args.driver, "run", "--port", str(port), "--parts", str(args.parts),
               "--seed", str(args.seed), "--speed", str(args.speed),
               "--spacing-min", str(args.spacing_min), "--spacing-max", str(args.spacing_max),
               "--distance", str(args.distance), "--lead-ms", str(args.lead_ms),
               "--mode", args.mode, "--parts-out", os.path.join(work, "parts.jsonl"),
               "--rt-priority", str(args.rt)]
        res = subprocess.run(drv, stdout=subprocess.PIPE, text=True, check=False)
        if res.returncode != 0:
            sys.exit(f"line_sim: the driver failed (exit {res.returncode})")
        summary = json.loads(res.stdout)
    finally:
        plc.send_signal(signal.SIGTERM)
        plc.wait(timeout=20)
    return analyse(work, summary, args)


def rt_priority(value, auto):
    """--rt/--plc-rt: a number, or auto: the priority where chrt -f works
    (root or CAP_SYS_NICE), else 0, said on stderr so a run without it is
    not mistaken for one with it."""
    if value != "auto":
        return int(value)
    ok = subprocess.run(["chrt", "-f", "1", "true"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, check=False).returncode == 0
    if not ok:
        print("line_sim: real-time priority not allowed here; running without it",
              file=sys.stderr)
    return auto if ok else 0


def check(out):
    s, d = out["sync"], out["driver"]["sync"]
    bad = [k for k in ("missed_rejects", "extra_rejects", "missed_passes", "extra_passes", "late")
           if s[k] != 0]
    if s["max_abs_error"] > 2:
        bad.append(f"max error {s['max_abs_error']:.2f} counts > 2")
    if s["pulses"] != out["parts"]:
        bad.append(f"{s['pulses']} pulses for {out['parts']} parts")
    for k in ("pulses_lost", "write_failures", "queue_overflow", "pulses_merged"):
        if d[k] != 0:
            bad.append(f"{k} {d[k]}")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--driver", required=True, help="build/tests/unit/line-sim-driver")
    p.add_argument("--parts", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--speed", type=float, default=200.0, help="nominal counts per second")
    p.add_argument("--spacing-min", type=float, default=12.0)
    p.add_argument("--spacing-max", type=float, default=36.0)
    p.add_argument("--distance", type=float, default=300.0, help="reference line -> ejector, counts")
    p.add_argument("--lead-ms", type=float, default=20.0)
    p.add_argument("--mode", choices=("fire", "queue"), default="fire")
    p.add_argument("--rt", default="0",
                   help="the app's output threads at this SCHED_FIFO priority (0: none; "
                   "auto: 10 where this machine allows real-time priority)")
    p.add_argument("--plc-rt", default="0",
                   help="the simulated PLC under chrt -f at this priority (0: none; "
                   "auto: 20 where allowed)")
    p.add_argument("--check", action="store_true")
    p.add_argument("--json", help="write the figures here too")
    p.add_argument("--keep", help="a folder for the run's files (pulses, parts, belt), kept")
    args = p.parse_args()
    args.rt = rt_priority(args.rt, 10)
    args.plc_rt = rt_priority(args.plc_rt, 20)
    with tempfile.TemporaryDirectory(prefix="line-sim-") as work:
        out = run(args, work if not args.keep else args.keep)
    out["config"] = vars(args)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if args.check:
        bad = check(out)
        if bad:
            sys.exit("line_sim: synchronised rule failed: " + "; ".join(bad))


if __name__ == "__main__":
    main()
