#!/usr/bin/python3
"""Side by side in one run: torchcodes reading whole 1280x720 YUY2 frames
vs GStreamer's own zxing element (gst-plugins-bad, which needs a
videoconvert to I420 first) on the same frames.

FRAMES frames of a shaded, grainy surface, each with three symbols: a QR
code (4 px modules) and a Code 128 (3 px) at random places, and a
DataMatrix (5 px) near the middle (zxing-cpp 1.4 finds a DataMatrix only
across the view's middle row or column), each turned at random (the 1D code
by up to 10 degrees), blurred (sigma 0.7), noise sigma 2. The frames are
written once as raw YUY2 and read from the page cache by both pipelines:

  A: filesrc ! rawvideoparse format=yuy2 ! torchcodes full-frame=always
       ! torchmetaconvert ! fakesink
  B: filesrc ! rawvideoparse format=yuy2 ! videoconvert ! video/x-raw,format=I420
       ! zxing ! fakesink        (gst-launch-1.0 -m: its "barcode" messages)

ROUNDS rounds, A and B alternating, each pipeline also run on the first
frame alone (filesrc num-buffers=1) so that start-up (torchcodes lives in
the plugin that loads libtorch) is taken out: per pipeline the median of
(wall, CPU of the gst-launch-1.0 process) on all frames minus on one,
per further frame, and the symbols read right per symbology.

  tests/bench/codes_vs_zxing.py [--frames 60] [--rounds 3] [--kinds QRCode,Code128,DataMatrix]

--kinds QRCode gives frames with the QR code alone: the element reads one
symbol a frame (zxing-cpp's ReadBarcode), torchcodes all of them
(ReadBarcodes), so one symbol a frame compares the same work.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import code_render as cr  # noqa: E402

W, H = 1280, 720
KINDS = [("QRCode", 4, 360), ("Code128", 3, 10), ("DataMatrix", 5, 360)]


def make(path, n, kinds):
    """Writes n YUY2 frames; returns each frame's {format: text}."""
    rng = np.random.default_rng(1280)
    truth = []
    with open(path, "wb") as f:
        for i in range(n):
            seed = int(rng.integers(1 << 30))
            canvas = cr.scene(W, H, seed)
            texts = {}
            for fmt, module, turn in kinds:
                text = {"QRCode": f"SN-2026-{i:06d}", "Code128": f"PART-{i:06d}",
                        "DataMatrix": f"{424200 + i:06d}"}[fmt]
                lo = 0 if turn == 360 else -turn
                angle = float(rng.uniform(lo, turn))
                patch = cr.symbol_patch(fmt, text, module, angle, 0.7)
                if fmt == "DataMatrix":
                    cx, cy = W / 2 + rng.uniform(-60, 60), H / 2 + rng.uniform(-40, 40)
                elif fmt == "QRCode":  # left half, clear of the middle
                    cx, cy = rng.uniform(150, W / 2 - 150), rng.uniform(120, H - 120)
                else:  # right half
                    cx, cy = rng.uniform(W / 2 + 300, W - 300), rng.uniform(100, H - 100)
                cr.place(canvas, patch, cx, cy)
                texts[fmt] = text
            f.write(cr.to_yuy2(cr.finish(canvas, 0.7, 2.0, seed + 1)).tobytes())
            truth.append(texts)
    return truth


def run(cmd, env):
    """(stdout, wall s, CPU s of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}...: {p.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, wall, cpu


def torchcodes_reads(jsonl, n):
    with open(jsonl) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    return [{c["format"]: c["text"] for c in r.get("codes", [])} for r in recs[:n]]


def zxing_reads(stdout, n, frame_ns):
    """Per frame {format: text} from the zxing element's bus messages."""
    reads = [dict() for _ in range(n)]
    for line in stdout.splitlines():
        if "barcode" not in line or "symbol=" not in line:
            continue
        ts = re.search(r"timestamp=\(guint64\)(\d+)", line)
        kind = re.search(r"type=\(string\)([A-Za-z0-9_-]+)", line)
        sym = re.search(r'symbol=\(string\)("(?:[^"\\]|\\.)*"|[^,;]+)', line)
        if not (ts and kind and sym):
            continue
        i = round(int(ts.group(1)) / frame_ns)
        if 0 <= i < n:
            reads[i][kind.group(1)] = sym.group(1).strip('"')  # zxing-cpp's names too
    return reads


def score(reads, truth, kinds):
    right = {fmt: 0 for fmt, _, _ in kinds}
    wrong = 0
    for got, want in zip(reads, truth):
        for fmt, text in got.items():
            if want.get(fmt) == text:
                right[fmt] += 1
            else:
                wrong += 1
    return right, wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", default="QRCode,Code128,DataMatrix")
    ap.add_argument("--props", default="", help="more torchcodes properties, e.g. try-rotate=false")
    args = ap.parse_args()
    kinds = [k for k in KINDS if k[0] in args.kinds.split(",")]
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugin"))
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "frames.yuy2")
        truth = make(raw, args.frames, kinds)
        src = ["filesrc", f"location={raw}", "blocksize=%d" % (W * H * 2), "!", "rawvideoparse",
               "format=yuy2", f"width={W}", f"height={H}", "framerate=30/1", "!"]
        jsonl = os.path.join(tmp, "a.jsonl")
        codes = ["torchcodes", "full-frame=always"] + args.props.split()
        a = ["gst-launch-1.0", "-q"] + src + codes + ["!",
                                              "torchmetaconvert", f"location={jsonl}", "!",
                                              "fakesink"]
        b = ["gst-launch-1.0", "-m"] + src + ["videoconvert", "!", "video/x-raw,format=I420", "!",
                                              "zxing", "!", "fakesink"]
        figures = {"torchcodes": [], "videoconvert ! zxing": []}
        reads = {}
        one = src[:2] + ["num-buffers=1"] + src[2:]

        def marginal(cmd, one_cmd):
            _, wall1, cpu1 = run(one_cmd, env)  # first: the full run's output is kept
            out, wall, cpu = run(cmd, env)
            return out, ((wall - wall1) / (args.frames - 1), (cpu - cpu1) / (args.frames - 1))

        for _ in range(args.rounds):
            _, fig = marginal(a, a[:2] + one + a[2 + len(src):])
            figures["torchcodes"].append(fig)
            reads["torchcodes"] = torchcodes_reads(jsonl, args.frames)
            out, fig = marginal(b, b[:2] + one + b[2 + len(src):])
            figures["videoconvert ! zxing"].append(fig)
            reads["videoconvert ! zxing"] = zxing_reads(out, args.frames, 1e9 / 30)
    n = args.frames
    print(f"{n} frames {W}x{H} YUY2, {args.rounds} rounds alternating, medians; "
          f"symbols per frame: " + ", ".join(f"{f} {m}px" for f, m, _ in kinds))
    if args.props:
        print(f"torchcodes {args.props}")
    for name, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        right, wrong = score(reads[name], truth, kinds)
        total = sum(right.values())
        print(f"{name:22s} {1 / wall:6.1f} frames/s  {1000 * cpu:6.1f} ms CPU/frame  read "
              + ", ".join(f"{f} {right[f]}/{n}" for f, _, _ in kinds)
              + f"  ({100 * total / (len(kinds) * n):.1f} % of symbols), {wrong} wrong")


if __name__ == "__main__":
    sys.exit(main())
