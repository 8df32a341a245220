#!/usr/bin/python3
"""torchcodes on a harder rendered set: read rate and wrong reads by module
size (2-6 px), contrast (down to 15 % of the light level), blur and
rotation (0-360 degrees).

Each frame is a 320x240 part view (GRAY8: torchcodes reads the luma as it
is) with one symbol near its middle (as inside a part's box), on a shaded,
grainy surface with sensor noise (sigma 2). For each format, module size,
contrast and blur there are ROTATIONS frames, each symbol turned by its own
angle drawn over 0-360 degrees. The frames go through
`rawvideoparse ! torchcodes full-frame=always ! torchmetaconvert`; a read
is right when the frame's code is the symbol's text, wrong when it is any
other text.

  tests/bench/codes_hard.py [--rotations 10] [--formats DataMatrix,QRCode]

Needs build/plugin and python3-zxing-cpp. Prints one table per format.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import code_render as cr  # noqa: E402

W, H = 320, 240
MODULES = (2, 3, 4, 6)
CONTRASTS = (0.8, 0.3, 0.15)
BLURS = (0.0, 1.0, 2.0)
TEXTS = {"DataMatrix": "424201", "QRCode": "SN-2026-000123", "Code128": "PART-000123"}


def frames(fmt, rotations):
    """(grey frame, condition) for every cell of the grid."""
    rng = np.random.default_rng(35)
    for module in MODULES:
        for contrast in CONTRASTS:
            for blur in BLURS:
                for k in range(rotations):
                    seed = int(rng.integers(1 << 30))
                    angle = float(rng.uniform(0, 360))
                    canvas = cr.scene(W, H, seed)
                    patch = cr.symbol_patch(fmt, TEXTS[fmt], module, angle, contrast)
                    cr.place(canvas, patch, W / 2 + rng.uniform(-10, 10),
                             H / 2 + rng.uniform(-10, 10))
                    yield cr.finish(canvas, blur, 2.0, seed + 1), (module, contrast, blur, angle)


def read_all(grey_frames):
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugin"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.jsonl")
        cmd = ["gst-launch-1.0", "-q", "fdsrc", "fd=0", "!", "rawvideoparse", "format=gray8",
               f"width={W}", f"height={H}", "framerate=30/1", "!", "torchcodes",
               "full-frame=always", "!", "torchmetaconvert", f"location={out}", "!", "fakesink"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, env=env)
        for g in grey_frames:
            p.stdin.write(g.tobytes())
        p.stdin.close()
        if p.wait() != 0:
            raise RuntimeError("the torchcodes pipeline failed")
        with open(out) as f:
            return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rotations", type=int, default=10, help="frames (angles) per cell")
    ap.add_argument("--formats", default="DataMatrix,QRCode")
    args = ap.parse_args()
    for fmt in args.formats.split(","):
        made = list(frames(fmt, args.rotations))
        recs = read_all(g for g, _ in made)
        cells, wrong_total, by_angle = {}, 0, {}
        for (g, (module, contrast, blur, angle)), rec in zip(made, recs):
            texts = [c["text"] for c in rec.get("codes", [])]
            right = TEXTS[fmt] in texts
            wrong = sum(t != TEXTS[fmt] for t in texts)
            wrong_total += wrong
            c = cells.setdefault((module, contrast, blur), [0, 0])
            c[0] += 1
            c[1] += right
            a = by_angle.setdefault(int(angle // 45) * 45, [0, 0])
            a[0] += 1
            a[1] += right
        print(f"\n{fmt} '{TEXTS[fmt]}': read right / frames by module (rows), "
              f"contrast x blur sigma (columns); {len(made)} frames, {wrong_total} wrong reads")
        print("module " + " ".join(f"c{c:.2f}/b{b:.0f}".rjust(10) for c in CONTRASTS
                                    for b in BLURS))
        for module in MODULES:
            row = [cells[(module, c, b)] for c in CONTRASTS for b in BLURS]
            print(f"{module:4d}px " + " ".join(f"{r}/{n}".rjust(10) for n, r in row))
        total = sum(r for n, r in cells.values())
        print(f"all: {total}/{len(made)} ({100 * total / len(made):.1f} %); by angle: " +
              ", ".join(f"{k}-{k + 45}: {r}/{n}" for k, (n, r) in sorted(by_angle.items())))


if __name__ == "__main__":
    sys.exit(main())
