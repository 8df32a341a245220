#!/usr/bin/python3
"""Part crops for the demo anomaly model: good parts from the line's station.

An anomaly model is fitted to one station's good parts: its camera, optics,
lighting and compression. The crops here come from still scenes rendered
under the conditions of the line clip's camera (make_detection_clip.py:
tint, gradient, vignette, lighting level over the clip's whole range
including its passing shadows, focus blur, motion blur at the belt speed,
sensor noise, JPEG quality 60), with new parts, kinds, angles, positions and
belt phase drawn from the seed. The clip itself is never used to fit or to
set thresholds: it is the test set. Every part carries a DataMatrix serial
as the clip's station etches them (part_codes.station_mark: placed as the
clip's, turned anywhere, some smudged, a few damaged): the mark is part of
a good part.

Only parts lying wholly in view are cropped (a QA app judges whole parts);
crops are cut as torchinfer's inference-region=roi-list cuts a detection
(defect_crops.py: jittered box, object-padding 0.1, clipped, area-resized
in float to 96x96, stretched).

Importable API (train_anomaly.py, eval_anomaly.py):
  station_samples(seed, label_p)  [(crop, label index, defect box in crop
                                   pixels or None, SHAPES index)] of the
                                   whole parts of scene `seed`
  crop_set(first_seed, count, label_p, workers)
                                  the same for scenes first_seed.., stacked:
                                  (crops [N,96,96,3] float32, labels, boxes,
                                  shapes)
  clip_views(truth_path)          every whole view of every judged part of
                                  the decoded clip: (crops, [{part, frame,
                                  defective, boxes}]), boxes = the part's
                                  truth defect boxes in crop pixels
"""
import json
import multiprocessing
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_crops as dc  # noqa: E402
import make_clip  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402
import part_codes  # noqa: E402

GOOD = [1.0, 0.0, 0.0, 0.0, 0.0]   # label_p: good parts only
JPEG_QUALITY = 60                  # the line clip's MJPEG quality
GAP = 50                           # the line's least gap between parts (px)
SHAPES = ["washer", "bracket_rect", "bracket_l", "bracket_l_mirrored"]


def station_lighting(rng):
    """The line clip's camera (make_detection_clip.frame_scene), with the
    lighting level anywhere in the clip's range (drift x shadows)."""
    return dict(gain=float(rng.uniform(0.65, 1.14)), tint=(1.0, 0.99, 0.97),
                gradient=(0.1, -0.06), vignette=0.15,
                focus_blur=float(0.4 + 0.3 * rng.random()), motion_blur=4,
                noise=float(1.0 + 0.5 * rng.random()), noise_seed=int(rng.integers(1 << 31)))


def station_scene(seed, label_p):
    """(Scene, labels): 1-3 whole parts on the belt, boxes GAP+ px apart."""
    rng = np.random.default_rng(seed)
    parts, boxes, labels = [], [], []
    for _ in range(int(rng.integers(1, 4))):
        label = dc.LABELS[rng.choice(len(dc.LABELS), p=label_p)]
        part = dc.random_defect_part(rng, label)
        part.angle = float(rng.uniform(-12, 12))
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        for _ in range(40):
            cx = float(rng.uniform(hx + 1, mf.WIDTH - hx - 1))
            cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 8),
                                   min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 8)))
            box = [cx - hx, cy - hy, cx + hx, cy + hy]
            if not any(md._overlaps(box, b, GAP) for b in boxes):
                part.cx, part.cy = cx, cy
                parts.append(part)
                boxes.append(box)
                labels.append(label)
                break
    scene = mf.Scene(parts=parts, belt_offset=float(rng.uniform(0, mf.BELT_PERIOD)),
                     **station_lighting(rng))
    mark_rng = np.random.default_rng([seed, 35])  # its own stream: the scene is as unmarked
    for part in parts:
        part.code = part_codes.station_mark(part, mark_rng, mf._part_sdf)
    return scene, labels


def shape_of(part):
    """Index in SHAPES: the part's outline as the camera sees it (an L
    bracket and its mirror image are different outlines)."""
    if part.kind == "bracket_l":
        return SHAPES.index("bracket_l_mirrored" if part.mirror else "bracket_l")
    return SHAPES.index(part.kind)


def box_in_crop(box, part_box):
    """A frame-pixel box in the pixels of the 96x96 crop cut around part_box."""
    x0, y0, x1, y1 = dc.pad_box(part_box, dc.PADDING)
    sx, sy = dc.SIZE / (x1 - x0), dc.SIZE / (y1 - y0)
    return [(box[0] - x0) * sx, (box[1] - y0) * sy, (box[2] - x0) * sx, (box[3] - y0) * sy]


def station_samples(seed, label_p=GOOD):
    scene, labels = station_scene(seed, label_p)
    img, _ = mf.render(scene)
    img = md.jpeg_roundtrip(img, JPEG_QUALITY)
    rng = np.random.default_rng(seed + 55)
    out = []
    for part, label in zip(scene.parts, labels):
        full = mf.part_bbox(part)
        if full[0] < 0 or full[1] < 0 or full[2] > mf.WIDTH or full[3] > mf.HEIGHT:
            continue  # not whole: a QA app does not judge it
        box = dc.jitter_box(rng, full)
        defect = box_in_crop(md.defect_bbox(part), box) if part.defect else None
        out.append((dc.crop(img, box), dc.LABELS.index(label), defect, shape_of(part)))
    return out


def _samples(args):
    return station_samples(*args)


def crop_set(first_seed, count, label_p=GOOD, workers=2):
    jobs = [(s, label_p) for s in range(first_seed, first_seed + count)]
    with multiprocessing.Pool(workers) as pool:
        samples = [s for chunk in pool.map(_samples, jobs, chunksize=8) for s in chunk]
    return (np.stack([s[0] for s in samples]).astype(np.float32),
            np.array([s[1] for s in samples]), [s[2] for s in samples],
            np.array([s[3] for s in samples]))


def clip_views(truth_path=os.path.join(HERE, "line.truth.json")):
    with open(truth_path) as f:
        truth = json.load(f)
    decoded = make_clip.decode(os.path.join(os.path.dirname(truth_path), truth["video"]))
    crops, views = [], []
    for p in truth["parts"]:
        if p["first_full"] is None:
            continue
        for t in range(p["first_full"], p["last_full"] + 1):
            objs = [o for o in truth["frames"][t]["objects"] if o["part"] == p["id"]]
            box = next(o["bbox"] for o in objs if o["class"] in md.PART_CLASSES)
            crops.append(dc.crop(decoded[t], box))
            views.append({"part": p["id"], "frame": t, "defective": p["defective"],
                          "boxes": [box_in_crop(o["bbox"], box) for o in objs
                                    if o["class"] in md.DEFECT_CLASSES]})
    return np.stack(crops).astype(np.float32), views
