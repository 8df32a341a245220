#!/usr/bin/python3
"""torchinfer-qa-line --plc on the demo clip against a real Modbus TCP PLC
(tests/bench/line_sim_plc.py: pymodbus on 127.0.0.1, a belt encoder whose
speed varies +-50 %). Each case exits 1 with what was wrong.

  demo      one reject pulse per rejected part (9) and one pass pulse per
            passed part (4), each where the app scheduled the part at the
            ejector (+-2 encoder counts), the verdicts those of the truth.
  down      the PLC killed at the first decision and back 2 s later on the
            same belt: the run ends, failed writes are counted, pulses come
            again, every part is a pulse or a lost pulse; exit status 1.
  queue     --plc-mode queue: the PLC's shift register (the simulator's PLC
            program) fires each part from the queue the app writes, at the
            same counts.
  station   the same settings from a --station file; hostile station files
            and bad flags are refused (exit 2) naming the file and the fix.

Usage: qa_plc_test.py CASE  (env: TORCHINFER_QA_LINE, TORCHINFER_SOURCE_ROOT)
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("TORCHINFER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
APP = os.environ.get("TORCHINFER_QA_LINE", "build/pipelines/torchinfer-qa-line")
CLIP = os.path.join(SRC, "models", "demo", "line.mkv")
TRUTH = os.path.join(SRC, "models", "demo", "line.truth.json")
PLC = os.path.join(SRC, "tests", "bench", "line_sim_plc.py")
# The clip played at its own pace (identity sync=true: each frame at its
# time on the pipeline clock, as a camera takes them; the app then takes
# base time + PTS as the frame's moment). Its belt runs 12 px a frame at 30
# fps (360 px/s); at 0.07 counts a pixel that matches the simulated belt's
# 25 counts/s (12.5..37.5 with its +-50 %: 2 counts are 53 ms or more, so
# the test checks the timing rule, not how soon a loaded machine wakes the
# output's thread beside the app's inference threads). The ejector 75
# counts (3 s) on: every verdict comes in time.
SOURCE = ["--source", f"filesrc location={CLIP} ! matroskademux ! jpegdec ! videoconvert ! "
          "video/x-raw,format=YUY2 ! identity sync=true"]
FLAGS = ["--plc-encoder", "0", "--belt-units-per-px", "0.07", "--belt-ref-px", "320",
         "--ejector-distance", "75", "--ejector-lead-ms", "20", "--plc-pulse-ms", "10",
         "--plc-heartbeat-ms", "200"]


def fail(why):
    sys.exit("qa_plc_test: " + why)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_plc(work, port, name, resume=None, queue=False):
    cmd = [sys.executable, PLC, "--port", str(port), "--speed", "25", "--realtime",
           "--record", os.path.join(work, name + ".jsonl"),
           "--params", os.path.join(work, name + ".params.json")]
    if resume:
        cmd += ["--resume", os.path.join(work, resume + ".params.json")]
    if queue:
        cmd += ["--queue-base", "100", "--queue-slots", "16"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "listening":
        fail("the PLC did not start")
    return p


def stop_plc(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    p.wait(timeout=20)


def records(work, name):
    with open(os.path.join(work, name + ".jsonl"), encoding="utf-8") as f:
        return [json.loads(l) for l in f]


def lines_of(text):
    out = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    return [j for j in out if j["event"] == "part"], out[-1]


def truth_verdicts():
    with open(TRUTH, encoding="utf-8") as f:
        parts = json.load(f)["parts"]
    v = [p["verdict"] for p in parts if p.get("verdict")]
    return v.count("reject"), v.count("pass")


def check_pulses(parts, recs):
    """Each decided part: exactly one pulse on its coil at its count."""
    coil = {"reject": 0, "pass": 1}
    free = list(recs)
    for p in parts:
        want = coil[p["verdict"]]
        near = [r for r in free if r["coil"] == want
                and abs(r["act_count"] - p["plc"]["ejector_count"]) <= 2]
        if len(near) != 1:
            fail(f"part {p['part']} ({p['verdict']}, at count {p['plc']['ejector_count']:.2f}): "
                 f"{len(near)} pulses within 2 counts; pulses {[(r['coil'], round(r['act_count'], 2)) for r in recs]}")
        free.remove(near[0])
    if free:
        fail(f"extra pulses: {free}")


def demo(work, args, queue=False):
    port = free_port()
    plc = start_plc(work, port, "plc", queue=queue)
    try:
        run = subprocess.run([APP, "-q", "--plc", f"modbus://127.0.0.1:{port}"] + SOURCE + args,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                             cwd=SRC)
    finally:
        stop_plc(plc)
    if run.returncode != 0:
        fail(f"exit {run.returncode}: {run.stderr[-2000:]}")
    parts, summary = lines_of(run.stdout)
    rejects, passes = truth_verdicts()
    got = [p["verdict"] for p in parts]
    if (got.count("reject"), got.count("pass"), len(parts)) != (rejects, passes, rejects + passes):
        fail(f"verdicts {got}, truth {rejects} reject {passes} pass")
    if any(p["plc"]["outcome"] != "scheduled" or p["plc"]["late"] for p in parts):
        fail(f"not all scheduled in time: {[p['plc'] for p in parts]}")
    recs = records(work, "plc")
    if any(r["source"] != ("queue" if queue else "coil") for r in recs):
        fail(f"pulses from the wrong side: {recs}")
    check_pulses(parts, recs)
    s = summary["plc"]
    fired = (0, 0) if queue else (rejects, passes)  # queue mode: the PLC fires
    want = {"pulses_reject": fired[0], "pulses_pass": fired[1], "pulses_lost": 0, "pulses_merged": 0,
            "late": 0, "write_failures": 0, "queue_overflow": 0, "undrained": 0}
    if any(s[k] != v for k, v in want.items()):
        fail(f"summary {s}, want {want}")
    print(f"demo{' (queue)' if queue else ''}: {rejects} reject and {passes} pass pulses, "
          "each within 2 counts of its part")


def down(work):
    port = free_port()
    plc = start_plc(work, port, "plc")
    app = subprocess.Popen([APP, "-q", "--plc", f"modbus://127.0.0.1:{port}"] + SOURCE + FLAGS,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=SRC)
    out = [app.stdout.readline()]  # the first decision: the PLC goes away
    stop_plc(plc, signal.SIGKILL)
    time.sleep(2)
    plc2 = start_plc(work, port, "plc2", resume="plc")
    try:
        rest, err = app.communicate(timeout=300)
    finally:
        stop_plc(plc2)
    parts, summary = lines_of("".join(out) + rest)
    s = summary["plc"]
    fired_after = len(records(work, "plc2"))
    if app.returncode != 1 or "PLC output incomplete" not in err:
        fail(f"exit {app.returncode}, want 1 with the losses named: {err[-2000:]}")
    if s["write_failures"] < 1 or s["reconnects"] != 1 or fired_after < 1:
        fail(f"summary {s}; {fired_after} pulses after the PLC came back")
    if s["pulses_reject"] + s["pulses_pass"] + s["pulses_lost"] + s["pulses_merged"] != len(parts):
        fail(f"{len(parts)} parts, pulses not all accounted for: {s}")
    print(f"down: {s['write_failures']} failed writes, {s['pulses_lost']} lost pulses, "
          f"{fired_after} pulses after the PLC came back")


def refused(args, *words):
    run = subprocess.run([APP, "--clip", CLIP] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60, cwd=SRC)
    if run.returncode != 2 or not all(w in run.stderr for w in words):
        fail(f"{args}: exit {run.returncode}, stderr {run.stderr!r}, want 2 naming {words}")


def station(work):
    f = os.path.join(work, "station.json")
    with open(f, "w", encoding="utf-8") as out:
        json.dump({"plc": "modbus://127.0.0.1:1", "plc-encoder": 0, "belt-units-per-px": 0.07,
                   "belt-ref-px": 320, "ejector-distance": 75, "ejector-lead-ms": 20,
                   "plc-pulse-ms": 10, "plc-heartbeat-ms": 200, "reject-late": True}, out)
    # demo()'s --plc flag overrides the file's (a port where nothing listens).
    demo(work, ["--station", f])
    bad = os.path.join(work, "bad.json")
    with open(bad, "w", encoding="utf-8") as out:
        json.dump({"plc": "modbus://127.0.0.1:502", "ejector-distanse": 3}, out)
    refused(["--station", bad], bad, "unknown setting 'ejector-distanse'")
    with open(bad, "w", encoding="utf-8") as out:
        json.dump({"plc": "modbus://127.0.0.1:502", "ejector-distance": [3]}, out)
    refused(["--station", bad], bad, "ejector-distance")
    with open(bad, "w", encoding="utf-8") as out:
        out.write("{" + " " * (65 * 1024) + "}")
    refused(["--station", bad], bad)
    refused(["--station", work], work)
    refused(["--plc", "tcp://plc:502"], "modbus://HOST:PORT")
    refused(["--plc", "modbus://127.0.0.1:502", "--plc-encoder", "0"], "--ejector-distance")
    refused(["--plc", "modbus://127.0.0.1:502", "--ejector-distance", "5"], "--belt-speed")
    refused(["--ejector-distance", "5"], "need --plc")
    refused(["--plc", "modbus://127.0.0.1:502", "--ejector-distance", "5", "--belt-speed", "9",
             "--plc-pulse-ms", "0"], "--plc-pulse-ms")
    print("station: settings from the file; bad files and flags refused")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory(prefix="qa-plc-") as work:
        if case == "demo":
            demo(work, FLAGS)
        elif case == "queue":
            demo(work, FLAGS + ["--plc-mode", "queue"], queue=True)
        elif case == "down":
            down(work)
        elif case == "station":
            station(work)
        else:
            fail("give demo, queue, down or station")


if __name__ == "__main__":
    main()
