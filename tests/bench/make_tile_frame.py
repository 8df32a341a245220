#!/usr/bin/python3
"""A rendered 12 MP machine-vision frame with defects of 4-16 px, for
tests/bench/tiles.sh (generated at bench time, never committed).

A 4000x3000 RGB frame: a grey metal-like surface (smooth shading plus
sensor noise) with --defects dark spots and thin scratches, each 4-16 px
on its longer side, placed at random (seeded). Writes OUT.rgb (raw RGB,
row-major, no padding: multifilesrc caps video/x-raw,format=RGB) and
OUT.truth.json {"width", "height", "defects": [{"class", "bbox"}]}, bbox
[x0, y0, x1, y1] in frame pixels.

Usage: make_tile_frame.py OUT [--width 4000] [--height 3000] [--defects 60] [--seed 1]
"""
import argparse
import json

import numpy as np


def render(width, height, defects, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = 150 + 25 * np.sin(xx / 700.0) * np.cos(yy / 900.0)
    img = base + rng.normal(0, 4, size=(height, width)).astype(np.float32)
    truth = []
    for _ in range(defects):
        size = int(rng.integers(4, 17))
        x = int(rng.integers(20, width - 40))
        y = int(rng.integers(20, height - 40))
        if rng.random() < 0.5:  # a dark round spot of diameter `size`
            r = size / 2.0
            cy, cx = y + r, x + r
            ys, xs = np.mgrid[y:y + size, x:x + size]
            mask = (ys + 0.5 - cy) ** 2 + (xs + 0.5 - cx) ** 2 <= r * r
            img[y:y + size, x:x + size][mask] -= 90
            truth.append({"class": "spot", "bbox": [x, y, x + size, y + size]})
        else:  # a thin scratch, 1-2 px wide, horizontal or vertical
            w = int(rng.integers(1, 3))
            if rng.random() < 0.5:
                img[y:y + w, x:x + size] -= 80
                truth.append({"class": "scratch", "bbox": [x, y, x + size, y + w]})
            else:
                img[y:y + size, x:x + w] -= 80
                truth.append({"class": "scratch", "bbox": [x, y, x + w, y + size]})
    grey = np.clip(img, 0, 255).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, axis=2), truth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=4000)
    ap.add_argument("--height", type=int, default=3000)
    ap.add_argument("--defects", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rgb, truth = render(a.width, a.height, a.defects, a.seed)
    rgb.tofile(a.out + ".rgb")
    with open(a.out + ".truth.json", "w") as f:
        json.dump({"width": a.width, "height": a.height, "defects": truth}, f, indent=1)


if __name__ == "__main__":
    main()
