#!/usr/bin/env python3
"""Counting accuracy of torchanalytics at vertical gates x = 40 ... 600 (step
40) on models/demo/line.mkv, against models/demo/line.truth.json: one run of
the detector line per setting, all 15 gates in one torchanalytics element
(reference point: the box centre), parts = bracket + washer.

  GST_PLUGIN_PATH=build/plugin python3 tests/pipelines/gate_sweep.py [--interval 1 3] [--contained 0 0.9]

Prints per gate the truth (parts whose centre crosses it) and each setting's
count error (counted - truth), and per class the counts at x = 320.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIP = os.path.join(ROOT, "models/demo/line.mkv")
TRUTH = os.path.join(ROOT, "models/demo/line.truth.json")
MODEL = os.path.join(ROOT, "models/demo/parts_detector.pt")
PARTS = ("bracket", "washer")
GATES = list(range(40, 601, 40))


def truth_counts():
    t = json.load(open(TRUTH))
    xs = {}
    for f in t["frames"]:
        for o in f["objects"]:
            if o["class"] in PARTS:
                b = o["bbox"]
                xs.setdefault((o["part"], o["class"]), []).append((b[0] + b[2]) / 2)
    return {g: {c: sum(1 for (p, cl), v in xs.items() if cl == c and min(v) < g < max(v))
                for c in PARTS} for g in GATES}


def run(interval, contained, out):
    lines = ";".join(f"x{g}:{g},480,{g},0" for g in GATES)
    cmd = (f"gst-launch-1.0 -q filesrc location={CLIP} ! matroskademux ! jpegdec ! videoconvert ! "
           f"video/x-raw,format=YUY2 ! torchinfer model={MODEL} inference-interval={interval} ! "
           f"torchnms suppress-contained={contained} ! torchtrack ! "
           f"torchanalytics reference-point=center lines=\"{lines}\" ! "
           f"torchmetaconvert location={out} ! fakesink")
    subprocess.run(cmd, shell=True, check=True)
    last = json.loads(open(out).read().splitlines()[-1])["analytics"]["lines"]
    return {g: {c: last[f"x{g}"]["by_class"].get(c, {"forward": 0})["forward"] for c in PARTS}
            | {"backward": last[f"x{g}"]["backward"]} for g in GATES}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--contained", type=float, nargs="+", default=[0.0, 0.9])
    a = ap.parse_args()
    truth = truth_counts()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in a.interval:
            for c in a.contained:
                results[(i, c)] = run(i, c, os.path.join(tmp, f"{i}_{c}.jsonl"))
    keys = list(results)
    print("gate  truth  " + "  ".join(f"err(ii={i},sc={c})" for i, c in keys))
    for g in GATES:
        t = sum(truth[g].values())
        errs = []
        for k in keys:
            r = results[k][g]
            errs.append(f"{sum(r[p] for p in PARTS) - t:+d}" + (f" ({r['backward']} back)" if r["backward"] else ""))
        print(f"{g:4d}  {t:5d}  " + "  ".join(f"{e:>15s}" for e in errs))
    print("x=320 per class: truth", truth[320], {f"ii={i},sc={c}": {p: results[(i, c)][320][p] for p in PARTS}
                                                for i, c in keys})
    total = {k: sum(abs(sum(results[k][g][p] for p in PARTS) - sum(truth[g].values())) for g in GATES)
             for k in keys}
    print("sum of |error| over the 15 gates:", {f"ii={i},sc={c}": v for (i, c), v in total.items()})


if __name__ == "__main__":
    sys.exit(main())
