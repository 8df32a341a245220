#!/usr/bin/python3
"""Second stage on rotated parts: the demo defect classifier's accuracy on
axis-aligned crops (what roi-list cuts from a plain box) and on deskewed
crops (what it cuts from a yolov8-obb rotated box), on QA-line frames whose
parts lie at random angles (the classifier was fitted on parts within +-15
degrees).

Frames: models/demo's renderer (make_frames.py) with 1-3 parts per frame,
each at an angle drawn uniformly from [-90, 90), wholly in view, OK or with
one defect (LABELS of defect_crops.py, about equally often), 70 % of the
frames through JPEG as the demo clip is. Boxes are the renderer's truth, so
the two crops differ only in how they are cut:
  axis-aligned  the rotated part's bounds, padded 0.1 per side, clipped,
                area-resized to 96x96 (defect_crops.crop: roi-list's cut)
  deskewed      the part's own rectangle (bracket w x h, washer 2r x 2r)
                padded 0.1 per side, turned upright: the same bilinear
                sampling with n x n averaging as src/preprocess/deskew.cpp
                (its geometry is pinned by tests/unit/test_deskew.cpp and
                tests/elements/test_torchnms_obb.cpp)

Usage: obb_deskew_accuracy.py [--frames N] [--seed S]
Prints the accuracy of each, overall, per part kind, and for parts within
+-15 degrees vs beyond.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models", "demo"))
import defect_crops as dc  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402


def deskew(img, box, out_w, out_h):
    """Rotated box (cx, cy, w, h, angle in degrees clockwise) -> out_h x
    out_w x 3 float32, as deskew.cpp samples it."""
    cx, cy, w, h, ang = box
    a = math.radians(ang)
    c, s = math.cos(a), math.sin(a)
    n = int(min(4, max(1, math.ceil(max(w / out_w, h / out_h) - 1e-9))))
    H, W = img.shape[:2]
    src = img.astype(np.float32)
    v, u = np.mgrid[0:out_h, 0:out_w].astype(np.float64)
    acc = np.zeros((out_h, out_w, 3), np.float64)
    for sj in range(n):
        for si in range(n):
            bu = ((u + (si + 0.5) / n) / out_w - 0.5) * w
            bv = ((v + (sj + 0.5) / n) / out_h - 0.5) * h
            fx = np.clip(cx + bu * c - bv * s - 0.5, 0, W - 1)
            fy = np.clip(cy + bu * s + bv * c - 0.5, 0, H - 1)
            i, j = np.minimum(fx.astype(int), W - 1), np.minimum(fy.astype(int), H - 1)
            i1, j1 = np.minimum(i + 1, W - 1), np.minimum(j + 1, H - 1)
            tx, ty = (fx - i)[..., None], (fy - j)[..., None]
            top = src[j, i] + (src[j, i1] - src[j, i]) * tx
            bottom = src[j1, i] + (src[j1, i1] - src[j1, i]) * tx
            acc += top + (bottom - top) * ty
    return (acc / (n * n)).astype(np.float32)


def part_size(part):
    d = part.dims
    return (2 * d["r_out"], 2 * d["r_out"]) if part.kind == "washer" else (d["w"], d["h"])


def scene(seed):
    """Parts at random angles, wholly in view, boxes apart; their labels."""
    rng = np.random.default_rng(seed)
    parts, boxes, labels = [], [], []
    for _ in range(int(rng.integers(1, 4))):
        label = dc.LABELS[rng.choice(len(dc.LABELS), p=dc.LABEL_P)]
        part = dc.random_defect_part(rng, label)
        part.angle = float(rng.uniform(-90, 90))
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        if 2 * hy + 4 > mf.HEIGHT:
            continue
        for _ in range(40):
            cx = float(rng.uniform(hx + 1, mf.WIDTH - hx - 1))
            cy = float(rng.uniform(hy + 2, mf.HEIGHT - hy - 2))
            b = [cx - hx, cy - hy, cx + hx, cy + hy]
            if not any(md._overlaps(b, o, 4) for o in boxes):
                part.cx, part.cy = cx, cy
                parts.append(part), boxes.append(b), labels.append(label)
                break
    s = mf.Scene(parts=parts, belt_offset=float(rng.uniform(0, mf.BELT_PERIOD)),
                 **mf.random_lighting(rng))
    return s, labels, rng


def samples(frames, seed):
    axis, turned, truth, kinds, angles = [], [], [], [], []
    for k in range(frames):
        sc, labels, rng = scene(seed + k)
        img, _ = mf.render(sc)
        if rng.random() < 0.7:
            img = md.jpeg_roundtrip(img, rng.integers(50, 96))
        for part, label in zip(sc.parts, labels):
            if part.defect:
                d = md.defect_bbox(part)
                if md._area(md._clip(d)) < 0.98 * md._area(d):
                    continue
            axis.append(dc.crop(img, md._clip(mf.part_bbox(part)), dc.PADDING, dc.SIZE))
            w, h = part_size(part)
            p = 1 + 2 * dc.PADDING
            turned.append(deskew(img, (part.cx, part.cy, w * p, h * p, part.angle),
                                 dc.SIZE, dc.SIZE))
            truth.append(dc.LABELS.index(label))
            kinds.append(part.kind)
            angles.append(part.angle)
    return axis, turned, np.array(truth), np.array(kinds), np.array(angles)


def predict(model, crops):
    x = torch.from_numpy(np.stack(crops)).permute(0, 3, 1, 2)
    with torch.no_grad():
        return model(dc.normalise(x)).argmax(1).numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--seed", type=int, default=9_000_000)
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = torch.jit.load(os.path.join(ROOT, "models", "demo", "defect_classifier.pt")).eval()
    axis, turned, truth, kinds, angles = samples(args.frames, args.seed)
    pa, pt = predict(model, axis), predict(model, turned)
    rows = [("all", np.ones(len(truth), bool))]
    rows += [(k, kinds == k) for k in sorted(set(kinds))]
    rows += [("|angle| <= 15", np.abs(angles) <= 15), ("|angle| > 15", np.abs(angles) > 15)]
    print(f"{len(truth)} parts on {args.frames} frames (seed {args.seed})")
    print(f"{'parts':<16}{'n':>5}{'axis-aligned':>14}{'deskewed':>10}")
    for name, m in rows:
        print(f"{name:<16}{m.sum():>5}{(pa[m] == truth[m]).mean():>14.3f}"
              f"{(pt[m] == truth[m]).mean():>10.3f}")


if __name__ == "__main__":
    main()
