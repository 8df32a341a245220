#!/usr/bin/python3
"""Deterministic multi-object QA-line scenes for the demo detector.

Reuses make_frames.py's renderer (belt, parts, defects, lighting, blur,
noise, motion blur) and adds scenes with 0-4 parts and a box for every part
and every defect, so a detector can learn both and a QA app can tell which
part a defect belongs to.

Classes (CLASSES, index = detector class index):
  bracket, washer                 a part (rectangular or L bracket; washer)
  scratch, spot, missing_hole,    a defect; its box lies inside its part's
  chip                            box and the object carries that part's id

Importable API (train_detector.py, eval_detector.py, make_detection_clip.py):
  random_detection_scene(seed)  Scene with 0-4 non-overlapping parts, some cut
                                by the left/right frame edge
  annotate(scene)               objects [{"class", "class_id", "bbox", "part",
                                "ignore"}] in 640x480 pixels
  render_sample(seed, jpeg)     (640x480 RGB uint8, objects)

"ignore" marks an object that is mostly outside the frame (a part cut to
less than MIN_VISIBLE of its width or height, a defect less than half in
view): evaluation neither rewards nor penalises a detection there, as in
PASCAL VOC's "difficult" flag, and training does not ask for it.

Command line: make_detection_data.py OUTDIR [--count N] [--seed S] writes
lossless PNGs NNNN.png and truth.json (see write_set) for pipeline checks.
"""
import argparse
import io
import json
import math
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_frames as mf  # noqa: E402

CLASSES = ["bracket", "washer", "scratch", "spot", "missing_hole", "chip"]
PART_CLASSES = CLASSES[:2]
DEFECT_CLASSES = CLASSES[2:]
MIN_VISIBLE = 0.35   # a part cut to less than this share of its box is "ignore"
HELDOUT_SEED = 4_000_000
TRAIN_SEED = 3_000_000


def _to_image(part, u, v):
    """Part coordinates (u, v) -> frame pixels (inverse of _local_coords)."""
    a = math.radians(part.angle)
    c, s = math.cos(a), math.sin(a)
    u = -u if part.mirror else u
    return part.cx + c * u - s * v, part.cy + s * u + c * v


def defect_bbox(part):
    """Unclipped frame box [x0, y0, x1, y1] of the part's defect (or None):
    the darkened scratch band, the spot's ellipse, the missing hole's circle,
    or the material bitten out of a washer's rim."""
    p, d = part.defect_params, part.dims
    t = np.linspace(0, 2 * math.pi, 64, endpoint=False)
    if part.defect == "scratch":
        r = p["width"] / 2 + 1.0
        (pu, pv), (qu, qv) = p["p"], p["q"]
        u = np.concatenate([pu + r * np.cos(t), qu + r * np.cos(t)])
        v = np.concatenate([pv + r * np.sin(t), qv + r * np.sin(t)])
    elif part.defect == "spot":
        cu, cv, ru, rv = p["ellipse"]
        u, v = cu + 1.15 * ru * np.cos(t), cv + 1.15 * rv * np.sin(t)
    elif part.defect == "missing_hole":
        hu, hv, hr = part.holes[p["hole"]]
        u, v = hu + hr * np.cos(t), hv + hr * np.sin(t)
    elif part.defect == "chip":
        cu, cv, rc = p["chip"]
        g = np.linspace(-rc, rc, 41)
        uu, vv = np.meshgrid(cu + g, cv + g)
        inside = ((uu - cu) ** 2 + (vv - cv) ** 2 <= rc * rc) & (uu ** 2 + vv ** 2 <= d["r_out"] ** 2)
        u, v = uu[inside], vv[inside]
    else:
        return None
    x, y = _to_image(part, u, v)
    return [float(x.min()), float(y.min()), float(x.max()), float(y.max())]


def _clip(box):
    return [max(box[0], 0.0), max(box[1], 0.0), min(box[2], mf.WIDTH), min(box[3], mf.HEIGHT)]


def _area(b):
    return max(b[2] - b[0], 0.0) * max(b[3] - b[1], 0.0)


def annotate(scene):
    """Objects of a scene: parts, then defects, boxes clipped to the frame and
    rounded to 0.1 px; "part" is the index of the part in scene.parts."""
    objects = []
    for i, part in enumerate(scene.parts):
        full = mf.part_bbox(part)
        box = _clip(full)
        if box[0] >= box[2] or box[1] >= box[3]:
            continue
        vis = min((box[2] - box[0]) / (full[2] - full[0]), (box[3] - box[1]) / (full[3] - full[1]))
        family = "washer" if part.kind == "washer" else "bracket"
        objects.append({"class": family, "class_id": CLASSES.index(family),
                        "bbox": [round(b, 1) for b in box], "part": i,
                        "ignore": vis < MIN_VISIBLE})
        dfull = defect_bbox(part)
        if dfull is None:
            continue
        dfull = [max(dfull[0], full[0]), max(dfull[1], full[1]),
                 min(dfull[2], full[2]), min(dfull[3], full[3])]  # inside the part's box
        dbox = _clip(dfull)
        if dbox[0] >= dbox[2] or dbox[1] >= dbox[3]:
            continue
        objects.append({"class": part.defect, "class_id": CLASSES.index(part.defect),
                        "bbox": [round(b, 1) for b in dbox], "part": i,
                        "ignore": _area(dbox) < 0.5 * _area(dfull) or vis < MIN_VISIBLE})
    return objects


def _overlaps(a, b, gap):
    return not (a[2] + gap <= b[0] or b[2] + gap <= a[0] or a[3] + gap <= b[1] or b[3] + gap <= a[1])


def random_detection_scene(seed, marks=0.0):
    """0-4 parts (fewer when they do not fit), each OK (45%) or with one
    random defect; boxes never overlap; a part may be cut by the left or
    right edge, as when it enters or leaves the camera's view. `marks`: the
    share of parts that carry a DataMatrix (add_marks); not a defect."""
    rng = np.random.default_rng(seed)
    want = int(rng.choice([0, 1, 2, 3, 4], p=[0.06, 0.22, 0.3, 0.26, 0.16]))
    parts, boxes = [], []
    for _ in range(want):
        label = ("bracket" if rng.random() < 0.55 else "washer") + \
                ("_ok" if rng.random() < 0.45 else "_defect")
        part = mf.random_part(rng, label)
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        for _ in range(40):
            cx = float(rng.uniform(-0.5 * hx, mf.WIDTH + 0.5 * hx))
            cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 12),
                                   min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 12)))
            box = [cx - hx, cy - hy, cx + hx, cy + hy]
            if not any(_overlaps(box, b, 6) for b in boxes):
                part.cx, part.cy = cx, cy
                parts.append(part)
                boxes.append(box)
                break
    scene = mf.Scene(parts=parts, belt_offset=float(rng.uniform(0, mf.BELT_PERIOD)),
                     **mf.random_lighting(rng))
    add_marks(scene.parts, seed, marks)
    return scene


def add_marks(parts, seed, share):
    """Each part gets a random DataMatrix marking (part_codes.random_mark)
    with probability `share`, from a stream of its own (seeded by the
    scene's seed), so the scene is otherwise the same as without marks."""
    if share <= 0:
        return
    import part_codes  # noqa: E402  (needs python3-zxing-cpp)
    rng = np.random.default_rng([seed, 35])
    for part in parts:
        if rng.random() < share:
            part.code = part_codes.random_mark(part, rng, mf._part_sdf)


def jpeg_roundtrip(img, quality):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=int(quality))
    return np.asarray(Image.open(buf).convert("RGB"))


def render_sample(seed, jpeg=False, marks=0.0):
    """(640x480 RGB uint8, objects) for scene `seed`; with jpeg=True half the
    frames (chosen by seed) also go through JPEG at quality 60-95, as the
    MJPEG demo clip does; `marks` as random_detection_scene's."""
    scene = random_detection_scene(seed, marks)
    img, _ = mf.render(scene)
    rng = np.random.default_rng(seed + 77)
    if jpeg and rng.random() < 0.5:
        img = jpeg_roundtrip(img, rng.integers(60, 96))
    return img, annotate(scene)


def write_set(outdir, first_seed, count):
    """NNNN.png (lossless, 640x480 RGB) and truth.json:
    {"classes": [...], "width", "height", "first_seed",
     "frames": [{"frame": i, "file": "NNNN.png", "seed", "objects": [...]}]}."""
    os.makedirs(outdir, exist_ok=True)
    frames = []
    for i in range(count):
        img, objects = render_sample(first_seed + i)
        name = f"{i:04d}.png"
        Image.fromarray(img).save(os.path.join(outdir, name), optimize=False, compress_level=6)
        frames.append({"frame": i, "file": name, "seed": first_seed + i, "objects": objects})
    head = {"classes": CLASSES, "width": mf.WIDTH, "height": mf.HEIGHT, "first_seed": first_seed,
            "note": "bbox [x0,y0,x1,y1] in frame pixels; part: index of the part in the frame "
                    "(a defect lies inside that part's box); ignore: mostly out of view, "
                    "neither a hit nor a miss in mAP"}
    entries = ",\n  ".join(json.dumps(f) for f in frames)
    text = json.dumps(head, indent=1)[:-2] + ',\n "frames": [\n  ' + entries + "\n ]\n}\n"
    with open(os.path.join(outdir, "truth.json"), "w") as f:
        f.write(text)
    return frames


def main():
    ap = argparse.ArgumentParser(description="Write detection frames (PNG) and truth.json.")
    ap.add_argument("outdir")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=HELDOUT_SEED, help="first scene seed")
    args = ap.parse_args()
    frames = write_set(args.outdir, args.seed, args.count)
    n = sum(len(f["objects"]) for f in frames)
    print(f"wrote {len(frames)} frames with {n} objects to {args.outdir}")


if __name__ == "__main__":
    main()
