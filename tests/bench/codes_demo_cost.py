#!/usr/bin/python3
"""The QA demo with codes vs without: torchinfer-qa-line on a clip with and
without --codes, alternating, ROUNDS rounds; the process CPU time of each
run (the summary's detector.process_cpu_s), medians and their ratio; and,
with --codes, the summary's codes figures.

  tests/bench/codes_demo_cost.py [--clip models/demo/line.mkv] [--rounds 3]

The shipped clip's parts carry DataMatrix serials: a read part is not
tried again, the damaged one on every view; tests/bench/codes_clip.py
--render --out DIR renders a copy with other marks (DIR/line.mkv).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(clip, codes):
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugin"))
    cmd = [os.path.join(ROOT, "build", "pipelines", "torchinfer-qa-line"), "--clip", clip,
           "--model", os.path.join(ROOT, "models/demo/parts_detector.pt"),
           "--classifier", os.path.join(ROOT, "models/demo/defect_classifier.pt"), "--quiet"]
    if codes:
        cmd.append("--codes")
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-800:])
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    return summary["detector"]["process_cpu_s"], summary.get("codes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clip", default=os.path.join(ROOT, "models/demo/line.mkv"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cpu = {False: [], True: []}
    codes = None
    for _ in range(args.rounds):
        for with_codes in (False, True):
            c, facts = run(args.clip, with_codes)
            cpu[with_codes].append(c)
            codes = facts or codes
    off, on = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"{args.clip}: process CPU without codes {off:.2f} s, with --codes {on:.2f} s "
          f"(x{on / off:.2f}); runs {cpu[False]} / {cpu[True]}")
    print(f"codes: {json.dumps(codes)}")


if __name__ == "__main__":
    sys.exit(main())
