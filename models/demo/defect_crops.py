#!/usr/bin/python3
"""Part crops for the demo defect classifier, cut as torchinfer cuts them.

At run time the two-stage demo feeds the classifier one crop per detected
part: torchinfer `inference-region=roi-list` takes the detector's part box
(frame pixels, rounded outwards), grows each side by `object-padding` (0.1:
10 % of the box's width or height), clips it to the frame and area-resizes
it (stretch, no letterbox) to the model input. The crops here are made the
same way from the renderer's truth boxes, moved and scaled a little
(JITTER) because a detector's box is never exact.

Scenes use make_frames.py's renderer (belt, rails, part kinds, defects,
lighting, focus/motion blur, noise) with 1-4 parts each, most of them whole;
a few are cut by the left/right edge by at most CUT_MAX of their width (the
QA app judges only whole parts, this only keeps the model calm at the edge).
A part's defect is one of LABELS[1:], chosen so that every class is about
equally common (missing_hole only exists on brackets, chip only on washers).

Importable API (train_defect_classifier.py, eval_defect_classifier.py):
  LABELS, SIZE, PADDING, MEAN, STD
  crop(img, box, padding, size)   padded, clipped, area-resized crop (float32
                                  HxWx3, 0..255, not rounded, as the plugin)
  scene_samples(seed, n[, label_p])  [(crop, label index, part kind)] for
                                  the parts of scene `seed`, n jittered crops
                                  each (label_p: good parts only, etc.)
  normalise(x)                    [N,3,H,W] 0..255 -> model input
"""
import math
import os
import sys

import cv2
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402

LABELS = ["ok", "scratch", "spot", "missing_hole", "chip"]
SIZE = 96          # model input, square: crops are stretched to it
PADDING = 0.1      # object-padding the demo uses
PART_CLASSES = ["bracket", "washer"]  # the detector's labels the crops are cut from
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
JITTER = 0.06      # box centre shift and size change, share of the box size
CUT_MAX = 0.06     # the most a training part is cut by the frame edge
# P(label): OK parts a little more common than each defect.
LABEL_P = [0.28, 0.18, 0.18, 0.18, 0.18]


def pad_box(box, padding, width=mf.WIDTH, height=mf.HEIGHT):
    """Integer crop rectangle [x0, y0, x1, y1): the box rounded outwards,
    each side grown by `padding` of the box's size (rounded outwards too),
    clipped to the frame."""
    x0, y0, x1, y1 = math.floor(box[0]), math.floor(box[1]), math.ceil(box[2]), math.ceil(box[3])
    pw, ph = padding * (x1 - x0), padding * (y1 - y0)
    return (max(math.floor(x0 - pw), 0), max(math.floor(y0 - ph), 0),
            min(math.ceil(x1 + pw), width), min(math.ceil(y1 + ph), height))


def crop(img, box, padding=PADDING, size=SIZE):
    """HxWx3 uint8 frame -> size x size x 3 float32 (0..255) crop: INTER_AREA
    in float, so the averages are not rounded to 8 bits (the plugin keeps
    them in float too)."""
    x0, y0, x1, y1 = pad_box(box, padding, img.shape[1], img.shape[0])
    region = np.ascontiguousarray(img[y0:y1, x0:x1], np.float32)
    return cv2.resize(region, (size, size), interpolation=cv2.INTER_AREA)


def jitter_box(rng, box):
    w, h = box[2] - box[0], box[3] - box[1]
    cx = (box[0] + box[2]) / 2 + rng.uniform(-JITTER, JITTER) * w
    cy = (box[1] + box[3]) / 2 + rng.uniform(-JITTER, JITTER) * h
    w *= 1 + rng.uniform(-JITTER, JITTER)
    h *= 1 + rng.uniform(-JITTER, JITTER)
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def random_defect_part(rng, label):
    if label == "missing_hole":
        family = "bracket"
    elif label == "chip":
        family = "washer"
    else:
        family = "bracket" if rng.random() < 0.55 else "washer"
    state = "ok" if label == "ok" else "defect"
    return mf.random_part(rng, f"{family}_{state}", defect=None if label == "ok" else label)


def random_crop_scene(seed, label_p=LABEL_P, marks=0.0):
    """(Scene, labels per part): 1-4 parts, boxes 4+ px apart; label_p
    (P of each of LABELS) [1, 0, 0, 0, 0] gives good parts only; `marks`:
    the share of parts carrying a DataMatrix (make_detection_data.add_marks)."""
    rng = np.random.default_rng(seed)
    want = int(rng.choice([1, 2, 3, 4], p=[0.15, 0.3, 0.35, 0.2]))
    parts, boxes, labels = [], [], []
    for _ in range(want):
        label = LABELS[rng.choice(len(LABELS), p=label_p)]
        part = random_defect_part(rng, label)
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        cut = rng.random() < 0.12
        for _ in range(40):
            if cut:
                side = 1 if rng.random() < 0.5 else -1
                cx = mf.WIDTH / 2 + side * (mf.WIDTH / 2 - hx + rng.uniform(0, CUT_MAX) * 2 * hx)
            else:
                cx = float(rng.uniform(hx + 1, mf.WIDTH - hx - 1))
            cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 12),
                                   min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 12)))
            box = [cx - hx, cy - hy, cx + hx, cy + hy]
            if not any(md._overlaps(box, b, 4) for b in boxes):
                part.cx, part.cy = float(cx), cy
                parts.append(part)
                boxes.append(box)
                labels.append(label)
                break
    scene = mf.Scene(parts=parts, belt_offset=float(rng.uniform(0, mf.BELT_PERIOD)),
                     **mf.random_lighting(rng))
    md.add_marks(scene.parts, seed, marks)
    return scene, labels


def scene_samples(seed, crops_per_part=1, label_p=LABEL_P, marks=0.0):
    """[(crop float32 SIZE x SIZE x 3, label index, kind)] of every part of
    scene `seed` whose defect (if any) lies wholly in view; 70 % of the
    frames go through JPEG (quality 50-95) first, as the MJPEG clip does.
    label_p and marks as random_crop_scene's."""
    scene, labels = random_crop_scene(seed, label_p, marks)
    img, _ = mf.render(scene)
    rng = np.random.default_rng(seed + 55)
    if rng.random() < 0.7:
        img = md.jpeg_roundtrip(img, rng.integers(50, 96))
    out = []
    for part, label in zip(scene.parts, labels):
        full = mf.part_bbox(part)
        box = md._clip(full)
        if part.defect:
            d = md.defect_bbox(part)
            if md._area(md._clip(d)) < 0.98 * md._area(d):
                continue  # the defect is (partly) out of view: no fair label
        for _ in range(crops_per_part):
            out.append((crop(img, jitter_box(rng, box)), LABELS.index(label), part.kind))
    return out


def normalise(x):
    """[N, 3, H, W] float 0..255 -> model input, channels_last as the plugin feeds it."""
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return ((x.float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)
