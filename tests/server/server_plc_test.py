#!/usr/bin/python3
"""torchinfer-server's per-camera "parts" and "plc" (docs/server.md, "Parts
and the PLC") against a real Modbus TCP PLC on 127.0.0.1
(tests/bench/line_sim_plc.py: pymodbus, a belt encoder whose speed varies
+-50 %). The camera is added over REST with the QA app's station settings
(the same as tests/pipelines/qa/qa_plc_test.py). Each case exits 1 with what
was wrong.

  demo    the demo clip once: 13 parts decided as the truth says (9 reject,
          4 pass); the camera is removed as soon as the last is decided,
          while parts are still between the camera and the ejector: they
          get their pulses on schedule before the camera goes (a pulse
          after the DELETE). Then exactly one reject pulse per rejected part
          and one pass pulse per passed part, each within 2 encoder counts
          of the count the server scheduled; /streams/{id} and /metrics
          say the same counts.
  down    the PLC killed at the first decision and back 2 s later: the
          camera runs on, failed writes are counted (status and
          torchinfer_plc_write_failures_total), one reconnect, pulses come
          again, every part is a pulse or a lost pulse.
  config  bad "parts"/"plc" bodies refused with 400 naming the field.

Usage: server_plc_test.py CASE  (env: TORCHINFER_SERVER, TORCHINFER_SOURCE_ROOT)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_proc import (SRC, Server, free_port, metric, promtool_problems,  # noqa: E402
                         refusal_problem, stop)
CLIP = os.path.join(SRC, "models", "demo", "line.mkv")
TRUTH = os.path.join(SRC, "models", "demo", "line.truth.json")
PLC = os.path.join(SRC, "tests", "bench", "line_sim_plc.py")
# qa_plc_test.py's station: 0.07 counts a pixel on a 25 counts/s belt, the
# ejector 75 counts (3 s) past the reference line.
STATION = {"plc-encoder": 0, "belt-units-per-px": 0.07, "belt-ref-px": 320,
           "ejector-distance": 75, "ejector-lead-ms": 20, "plc-pulse-ms": 10,
           "plc-heartbeat-ms": 200}


def fail(why):
    sys.exit("server_plc_test: " + why)


def start_plc(work, port, name, resume=None):
    cmd = [sys.executable, PLC, "--port", str(port), "--speed", "25", "--realtime",
           "--record", os.path.join(work, name + ".jsonl"),
           "--params", os.path.join(work, name + ".params.json")]
    if resume:
        cmd += ["--resume", os.path.join(work, resume + ".params.json")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "listening":
        fail("the PLC did not start")
    return p


def records(work, name):
    with open(os.path.join(work, name + ".jsonl"), encoding="utf-8") as f:
        return [json.loads(l) for l in f]


def camera(plc_port, **station):
    plc = dict(STATION, plc=f"modbus://127.0.0.1:{plc_port}", **station)
    return {"id": "line", "uri": "file://" + CLIP, "model": "parts", "loop": False,
            "track": True, "json": False, "parts": {"classifier": "classifier"}, "plc": plc}


def decided(server):
    s = server.json("/streams/line")
    return s is not None and s["parts"]["passed"] + s["parts"]["rejected"] >= 13


def truth_verdicts():
    with open(TRUTH, encoding="utf-8") as f:
        v = [p["verdict"] for p in json.load(f)["parts"] if p.get("verdict")]
    return v.count("reject"), v.count("pass")


def check_pulses(parts, recs):
    """Each decided part: exactly one pulse on its coil at its count."""
    coil = {"reject": 0, "pass": 1}
    free = list(recs)
    for p in parts:
        near = [r for r in free if r["coil"] == coil[p["verdict"]]
                and abs(r["act_count"] - p["plc"]["ejector_count"]) <= 2]
        if len(near) != 1:
            fail(f"part {p['part']} ({p['verdict']}, at {p['plc']['ejector_count']:.2f}): "
                 f"{len(near)} pulses within 2 counts; pulses "
                 f"{[(r['coil'], round(r['act_count'], 2)) for r in recs]}")
        free.remove(near[0])
    if free:
        fail(f"extra pulses: {free}")


def demo(work):
    port = free_port()
    plc = start_plc(work, port, "plc")
    server = Server(work, classifier=True)
    try:
        status, text = server.call("POST", "/streams", camera(port))
        if status != 201:
            fail(f"POST /streams: {status} {text}")
        server.wait(lambda: decided(server), 240, "the clip's 13 parts were not decided")
        last = server.json("/streams/line")
        asked = time.monotonic_ns()
        status, text = server.call("DELETE", "/streams/line")
        if status != 200:
            fail(f"DELETE: {status} {text}")
        # The camera goes once its parts have had their pulses.
        server.wait(lambda: metric(server.call("GET", "/metrics")[1],
                                   "torchinfer_streams_stopping", "") in (0, None)
                    and server.json("/streams/line") is None, 120, "the camera did not go")
    finally:
        server.close()
        stop(plc)
    parts = last["parts"]["latest"]
    rejects, passes = truth_verdicts()
    got = [p["verdict"] for p in parts]
    if (got.count("reject"), got.count("pass"), len(parts)) != (rejects, passes, 13):
        fail(f"verdicts {got}, truth {rejects} reject {passes} pass")
    if any(p["plc"]["outcome"] != "scheduled" or p["plc"]["late"] for p in parts):
        fail(f"not all scheduled in time: {[p['plc'] for p in parts]}")
    recs = records(work, "plc")
    check_pulses(parts, recs)
    after = [r for r in recs if r["t_ns"] > asked]
    if not after:
        fail("no pulse after the DELETE: the test did not remove the camera with parts on the belt")
    print(f"demo: {rejects} reject and {passes} pass pulses at their counts, {len(after)} of them "
          "after the camera was removed")


def check_metrics(server, want_reject, want_pass):
    text = server.call("GET", "/metrics")[1]
    got = {k: metric(text, "torchinfer_plc_pulses_total", f'stream="line",output="{k}"')
           for k in ("reject", "pass", "recheck")}
    if got != {"reject": want_reject, "pass": want_pass, "recheck": 0}:
        fail(f"/metrics pulses {got}")
    for name, want in (("torchinfer_plc_late_parts_total", 0),
                       ("torchinfer_plc_write_failures_total", 0),
                       ("torchinfer_plc_connected", 1)):
        got = metric(text, name, 'stream="line"')
        if got != want:
            fail(f"/metrics {name} {got}, want {want}")
    age = metric(text, "torchinfer_plc_encoder_age_seconds", 'stream="line"')
    if age is None or not 0 <= age < 5:
        fail(f"/metrics encoder age {age}")
    if promtool_problems(text):
        fail(f"promtool check metrics: {promtool_problems(text)}")


def counted(work):
    """The demo's counts in status and /metrics, the camera left to finish."""
    port = free_port()
    plc = start_plc(work, port, "plc")
    server = Server(work, classifier=True)
    try:
        server.call("POST", "/streams", camera(port))
        server.wait(lambda: decided(server), 240, "the clip's 13 parts were not decided")
        rejects, passes = truth_verdicts()
        server.wait(lambda: server.json("/streams/line")["plc"]["pulses"] ==
                    {"reject": rejects, "pass": passes, "recheck": 0}, 30,
                    "the pulses were not all sent")
        check_metrics(server, rejects, passes)
        s = server.json("/streams/line")["plc"]
        if (s["state"], s["late_parts"], s["write_failures"], s["pulses_lost"]) != \
                ("connected", 0, 0, 0):
            fail(f"status {s}")
    finally:
        server.close()
        stop(plc)
    print(f"counted: status and /metrics say {rejects} reject and {passes} pass pulses")


def down(work):
    port = free_port()
    plc = start_plc(work, port, "plc")
    server = Server(work, classifier=True)
    try:
        server.call("POST", "/streams", camera(port))
        server.wait(lambda: (server.json("/streams/line") or {}).get("parts", {})
                    .get("latest"), 240, "no part was decided")
        stop(plc, signal.SIGKILL)
        time.sleep(2)
        plc2 = start_plc(work, port, "plc2", resume="plc")
        try:
            server.wait(lambda: decided(server), 240, "the clip's 13 parts were not decided")
            server.wait(lambda: server.json("/streams/line")["plc"]["pending_pulses"] == 0, 30,
                        "pulses still pending")
            s = server.json("/streams/line")["plc"]
            text = server.call("GET", "/metrics")[1]
        finally:
            stop(plc2)
    finally:
        server.close()
    fired_after = len(records(work, "plc2"))
    failures = metric(text, "torchinfer_plc_write_failures_total", 'stream="line"')
    if s["write_failures"] < 1 or failures != s["write_failures"] or s["reconnects"] != 1 \
            or fired_after < 1:
        fail(f"status {s}, /metrics write failures {failures}; {fired_after} pulses after the "
             "PLC came back")
    p = s["pulses"]
    if p["reject"] + p["pass"] + s["pulses_lost"] + s["pulses_merged"] != 13:
        fail(f"13 parts, pulses not all accounted for: {s}")
    print(f"down: {s['write_failures']} failed writes, {s['pulses_lost']} lost pulses, "
          f"{fired_after} pulses after the PLC came back")


def refused(server, body, field, *words):
    why = refusal_problem(server, body, field, *words)
    if why:
        fail(why)


def config(work):
    server = Server(work, classifier=True)
    try:
        good = camera(1)
        cases = [
            (dict(good, plc=dict(good["plc"], **{"ejector-distanse": 3})),
             "plc.ejector-distanse", "unknown setting"),
            (dict(good, plc=dict(good["plc"], **{"ejector-distance": [3]})),
             "plc.ejector-distance", "number, string or boolean"),
            (dict(good, plc=dict(good["plc"], **{"plc-pulse-ms": 0})),
             "plc.plc-pulse-ms", "give a number from 1 to 10000"),
            (dict(good, plc=dict(good["plc"], plc="tcp://plc:502")), "plc.plc", "modbus://"),
            (dict(good, plc={k: v for k, v in good["plc"].items() if k != "ejector-distance"}),
             "plc.ejector-distance", "needed"),
            (dict(good, plc={k: v for k, v in good["plc"].items() if k != "plc-encoder"}),
             "plc.belt-speed", "needed"),
            (dict(good, plc={k: v for k, v in good["plc"].items() if k != "plc"}),
             "plc.plc", "modbus://HOST:PORT"),
            (dict(good, plc="modbus://127.0.0.1:502"), "plc", "JSON object"),
            ({k: v for k, v in good.items() if k != "parts"}, "plc", "needs \"parts\""),
            (dict(good, track=False), "parts", "\"track\": true"),
            (dict(good, parts={"classifier": "nope"}), "parts.classifier", "configured models"),
            (dict(good, parts={"classifer": "classifier"}), "parts.classifer", "unknown field"),
            (dict(good, parts={"part_classes": ["scratch"]}), "parts", "both"),
            (dict(good, parts={"part_classes": []}), "parts.part_classes", "1 to 64"),
            (dict(good, parts={"part_threshold": 2}), "parts.part_threshold", "0 to 1"),
        ]
        for body, field, *words in cases:
            refused(server, body, field, *words)
        if server.json("/streams")["streams"] != []:
            fail(f"a refused camera was added: {server.json('/streams')}")
    finally:
        server.close()
    print(f"config: {len(cases)} bad bodies refused naming the field")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"demo": demo, "counted": counted, "down": down, "config": config}
    if case not in cases:
        fail("give " + ", ".join(cases))
    with tempfile.TemporaryDirectory(prefix="server-plc-") as work:
        cases[case](work)


if __name__ == "__main__":
    main()
