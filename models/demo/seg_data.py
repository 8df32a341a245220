"""Training and held-out samples for the demo defect segmentation model.

Scenes come from the same renderer as the demo clip (make_frames.py: belt,
parts, defects, lighting, focus/motion blur, noise), placed as
make_detection_data.py places them (0-4 parts, none overlapping, some cut
by the frame edge) but with a defect on 75 % of the parts, since the
defects are what this model learns; OK parts stay as negatives (a bracket's
holes are not missing holes). Half the frames go through JPEG 60-95, as
the MJPEG clip does. Truth masks are defect_masks.py's.

Importable API (train_defect_seg.py, eval_defect_seg.py):
  CLASSES                  the model's labels, index = class score index
  random_seg_scene(seed)   a Scene
  frame_instances(scene)   [(class index, x0, y0, mask, ignore)] in frame px
  crops(seed, n, w, h)     n training crops of the frame of `seed`:
                           [(uint8 HxWx3, uint8 HxW instance map, instances)]
                           where map value k+1 is instance k and instances
                           are [(class index, box x0,y0,x1,y1, ignore)]
  instance_box(x0, y0, mask, w, h)  the box the model is trained to give
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_masks as dmk  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402

CLASSES = ["scratch", "spot", "missing_hole", "chip"]
TRAIN_SEED = 8_000_000
HELDOUT_SEED = 8_500_000
BOX_PAD = 2        # px each side around a mask: a box a pixel off does not cut the mask
MIN_IN_VIEW = 0.5  # a defect with less of its mask in the crop/frame is "ignore"


MARKS = 0.0  # share of parts carrying a DataMatrix (train_defect_seg.py --marks): not a defect


def random_seg_scene(seed):
    rng = np.random.default_rng(seed)
    want = int(rng.choice([0, 1, 2, 3, 4], p=[0.04, 0.22, 0.32, 0.26, 0.16]))
    parts, boxes = [], []
    for _ in range(want):
        label = ("bracket" if rng.random() < 0.55 else "washer") + \
                ("_defect" if rng.random() < 0.75 else "_ok")
        part = mf.random_part(rng, label)
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        for _ in range(40):
            cx = float(rng.uniform(-0.5 * hx, mf.WIDTH + 0.5 * hx))
            cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 12),
                                   min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 12)))
            box = [cx - hx, cy - hy, cx + hx, cy + hy]
            if not any(md._overlaps(box, b, 6) for b in boxes):
                part.cx, part.cy = cx, cy
                parts.append(part)
                boxes.append(box)
                break
    scene = mf.Scene(parts=parts, belt_offset=float(rng.uniform(0, mf.BELT_PERIOD)),
                     **mf.random_lighting(rng))
    md.add_marks(scene.parts, seed, MARKS)
    return scene


def instance_box(x0, y0, mask, width, height):
    """[x0, y0, x1, y1] around the mask's pixels (pixel i spans [i, i+1)),
    grown by BOX_PAD and clipped to the width x height image."""
    h, w = mask.shape
    return [max(x0 - BOX_PAD, 0), max(y0 - BOX_PAD, 0),
            min(x0 + w + BOX_PAD, width), min(y0 + h + BOX_PAD, height)]


def frame_instances(scene):
    """Defects of a scene in frame pixels; ignore as the truth file's rule
    (make_detection_data.annotate: a defect less than half in view)."""
    objects = md.annotate(scene)
    out = []
    for part, cls, x0, y0, m in dmk.scene_masks(scene):
        obj = next((o for o in objects if o["part"] == part and o["class"] == cls), None)
        out.append((CLASSES.index(cls), x0, y0, m, True if obj is None else obj["ignore"]))
    return out


def _render(seed):
    scene = random_seg_scene(seed)
    img, _ = mf.render(scene)
    rng = np.random.default_rng(seed + 77)
    if rng.random() < 0.5:
        img = md.jpeg_roundtrip(img, rng.integers(60, 96))
    return scene, img


def crops(seed, n, width, height):
    scene, img = _render(seed)
    inst = frame_instances(scene)
    full = np.zeros((mf.HEIGHT, mf.WIDTH), np.uint8)
    for k, (_, x0, y0, m, _) in enumerate(inst):
        region = full[y0:y0 + m.shape[0], x0:x0 + m.shape[1]]
        region[m] = k + 1
    rng = np.random.default_rng(seed + 99)
    out = []
    for j in range(n):
        if scene.parts and rng.random() < 0.85:  # mostly around a part, jittered
            p = scene.parts[int(rng.integers(len(scene.parts)))]
            cx, cy = p.cx + rng.uniform(-50, 50), p.cy + rng.uniform(-40, 40)
        else:
            cx, cy = rng.uniform(0, mf.WIDTH), rng.uniform(0, mf.HEIGHT)
        x0 = int(np.clip(round(cx - width / 2), 0, mf.WIDTH - width))
        y0 = int(np.clip(round(cy - height / 2), 0, mf.HEIGHT - height))
        imap = full[y0:y0 + height, x0:x0 + width].copy()
        found = []
        for k, (cls, mx, my, m, ignore) in enumerate(inst):
            sub = imap == k + 1
            area = int(sub.sum())
            if area == 0:
                continue
            ys, xs = np.nonzero(sub)
            box = instance_box(int(xs.min()), int(ys.min()),
                               np.ones((ys.max() - ys.min() + 1, xs.max() - xs.min() + 1)),
                               width, height)
            found.append((cls, box, ignore or area < MIN_IN_VIEW * m.sum()))
            imap[sub] = len(found)
        out.append((img[y0:y0 + height, x0:x0 + width].copy(), imap, found))
    return out
