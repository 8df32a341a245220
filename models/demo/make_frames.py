#!/usr/bin/python3
"""Deterministic synthetic camera frames of a factory QA conveyor belt.

A 640x480 camera looks down on a grey textured belt running left to right
between two steel rails. A frame shows bare belt or metal parts: brackets
(rectangular plates with 4 holes or L-shaped plates with 3 holes) and washers
(rings), each either OK or defective. Defects: dark scratch, dent/corrosion
spot, missing hole (brackets), chipped rim (washers). Lighting, position,
rotation, focus blur, motion blur and sensor noise vary.

Importable API (used by train_classifier.py and make_clip.py):
  CLASSES                      class names, index = classifier output index;
                               a part class means that part is entirely in
                               view, "empty" means no part is (bare belt, or a
                               part cut by the frame edge)
  random_part(rng, label, ...) a Part of that class with random geometry
  random_scene(seed, label)    a Scene for classification of that class
  render(scene)                -> (HxWx3 uint8 RGB, annotations); each
                               annotation is {"label", "kind", "defect",
                               "bbox": [x0, y0, x1, y1] (pixels, clipped),
                               "truncated"}, ready for a detector later
  downscale(img, w, h)         area (box) resize, as the plugin does

Command line: make_frames.py OUTDIR [--count N] [--seed S]  writes PNGs and
an index.json of labels/boxes for eyeballing the generator.
"""
import argparse
import functools
import json
import math
import os
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
from PIL import Image, ImageFilter

WIDTH, HEIGHT = 640, 480
BELT_Y0, BELT_Y1 = 64, 416
BELT_PERIOD = 1024  # belt texture repeats after this many pixels of travel
CLASSES = ["empty", "bracket_ok", "bracket_defect", "washer_ok", "washer_defect"]
EDGE_MARGIN = 8  # a part class is only ever shown at least this far inside the frame
MIN_CUT = 16     # "empty" frames with a part have it cut by the edge at least this much
DEFECTS = {"bracket": ["scratch", "spot", "missing_hole"],
           "washer": ["scratch", "spot", "chip"]}


@dataclass
class Part:
    kind: str                 # "bracket_rect", "bracket_l" or "washer"
    cx: float
    cy: float
    angle: float              # degrees
    dims: dict                # shape sizes in pixels
    holes: list               # [(u, v, r)] in part coordinates
    colour: tuple             # base RGB 0..255
    defect: Optional[str] = None
    defect_params: dict = field(default_factory=dict)
    mirror: bool = False
    texture_seed: int = 0
    code: Optional[dict] = None  # a DataMatrix marked on it (part_codes.py); None: bare

    @property
    def label(self):
        family = "washer" if self.kind == "washer" else "bracket"
        return f"{family}_{'defect' if self.defect else 'ok'}"


@dataclass
class Scene:
    parts: List[Part]
    belt_offset: float = 0.0  # belt travel in pixels; texture moves with parts
    gain: float = 1.0
    tint: tuple = (1.0, 1.0, 1.0)
    gradient: tuple = (0.0, 0.0)  # brightness slope across x and y
    vignette: float = 0.1
    focus_blur: float = 0.0   # gaussian sigma, pixels
    motion_blur: int = 0      # horizontal smear on the belt, pixels
    noise: float = 3.0        # sensor noise sigma, 0..255 units
    noise_seed: int = 0
    label: Optional[str] = None  # frame class, when made by random_scene


def _smooth_noise(rng, h, w, cell, wrap_x=False):
    """Value noise: random grid upsampled bicubically; wraps in x if asked."""
    gh, gw = h // cell + 3, w // cell
    grid = rng.standard_normal((gh, gw)).astype(np.float32)
    if wrap_x:
        grid = np.concatenate([grid, grid, grid], axis=1)
    img = Image.fromarray(grid, mode="F").resize((grid.shape[1] * cell, gh * cell), Image.BICUBIC)
    arr = np.asarray(img)
    if wrap_x:
        arr = arr[:, w:2 * w]
    return arr[cell:cell + h, :w]


@functools.lru_cache(maxsize=1)
def _belt_texture():
    """The one physical belt: belt rows x (BELT_PERIOD + WIDTH), periodic in x."""
    rng = np.random.default_rng(12345)
    h, w = HEIGHT, BELT_PERIOD
    tex = 96 + 9 * _smooth_noise(rng, h, w, 64, True) + 4 * _smooth_noise(rng, h, w, 8, True)
    tex += 3 * rng.standard_normal((h, w)).astype(np.float32)  # rubber grain
    x = np.arange(w)
    for seam in range(0, w, 256):  # splice lines / cleats moving with the belt
        d = np.minimum(np.abs(x - seam - 40), w - np.abs(x - seam - 40))
        tex -= 28 * np.exp(-(d / 2.0) ** 2)[None, :]
        tex += 10 * np.exp(-((d - 4) / 1.5) ** 2)[None, :]
    for _ in range(6):  # oil stains
        cx, cy = rng.uniform(0, w), rng.uniform(BELT_Y0, BELT_Y1)
        r = rng.uniform(10, 30)
        dx = np.minimum(np.abs(x - cx), w - np.abs(x - cx))[None, :]
        dy = (np.arange(h) - cy)[:, None]
        tex -= 14 * np.exp(-(dx ** 2 + dy ** 2) / (2 * r * r))
    tex = tex[BELT_Y0:BELT_Y1]
    tex = np.concatenate([tex, tex[:, :WIDTH]], axis=1)  # any offset is then a plain slice
    return np.repeat(tex[:, :, None], 3, axis=2) * np.array([1.0, 1.0, 1.03], np.float32)


@functools.lru_cache(maxsize=1)
def _static_frame():
    """Rails above and below the belt (they do not move)."""
    rng = np.random.default_rng(54321)
    img = np.zeros((HEIGHT, WIDTH, 3), np.float32)
    y = np.arange(HEIGHT, dtype=np.float32)[:, None]
    x = np.arange(WIDTH, dtype=np.float32)[None, :]
    for y0, y1 in ((0, BELT_Y0), (BELT_Y1, HEIGHT)):
        t = (y - y0) / (y1 - y0)
        rail = 60 + 50 * np.sin(np.pi * t) ** 2 + 4 * _smooth_noise(rng, HEIGHT, WIDTH, 16)
        rail = rail * (1 - 0.4 * (np.abs(t - 0.5) > 0.45))
        for bx in range(40, WIDTH, 140):  # bolts
            d = np.sqrt((x - bx) ** 2 + (y - (y0 + y1) / 2) ** 2)
            rail = np.where(d < 7, 140 - 8 * d, rail)
        rows = slice(y0, y1)
        img[rows] = (rail[rows, :, None] * np.array([0.9, 0.95, 1.05], np.float32))
    return img


@functools.lru_cache(maxsize=1)
def _noise_bank():
    """Unit gaussian noise; frames read it at a seed-chosen offset, which is
    much cheaper than drawing fresh noise for every frame."""
    return np.random.default_rng(777).standard_normal(HEIGHT * WIDTH * 3 + (1 << 20),
                                                      dtype=np.float32)


def _sd_box(u, v, hw, hh, r):
    qx, qy = np.abs(u) - hw + r, np.abs(v) - hh + r
    return (np.sqrt(np.maximum(qx, 0) ** 2 + np.maximum(qy, 0) ** 2)
            + np.minimum(np.maximum(qx, qy), 0) - r)


def _sd_segment(u, v, p, q):
    pu, pv, du, dv = u - p[0], v - p[1], q[0] - p[0], q[1] - p[1]
    t = np.clip((pu * du + pv * dv) / (du * du + dv * dv), 0, 1)
    return np.sqrt((pu - t * du) ** 2 + (pv - t * dv) ** 2)


def _outline_sdf(part, u, v):
    """Signed distance (negative inside) of the part outline, holes excluded."""
    d = part.dims
    if part.kind == "washer":
        rr = np.sqrt(u * u + v * v)
        sd = np.maximum(rr - d["r_out"], d["r_in"] - rr)
        if part.defect == "chip":
            cu, cv, rc = part.defect_params["chip"]
            sd = np.maximum(sd, rc - np.sqrt((u - cu) ** 2 + (v - cv) ** 2))
        return sd
    if part.kind == "bracket_rect":
        return _sd_box(u, v, d["w"] / 2, d["h"] / 2, 8)
    w, h, t = d["w"], d["h"], d["t"]
    arm_a = _sd_box(u, v - (h / 2 - t / 2), w / 2, t / 2, 6)
    arm_b = _sd_box(u - (-w / 2 + t / 2), v, t / 2, h / 2, 6)
    return np.minimum(arm_a, arm_b)


def _part_sdf(part, u, v):
    sd = _outline_sdf(part, u, v)
    for i, (hu, hv, hr) in enumerate(part.holes):
        if part.defect == "missing_hole" and i == part.defect_params["hole"]:
            continue
        sd = np.maximum(sd, hr - np.sqrt((u - hu) ** 2 + (v - hv) ** 2))
    return sd


def _extent(part):
    d = part.dims
    return d["r_out"] if part.kind == "washer" else 0.5 * math.hypot(d["w"], d["h"])


def part_bbox(part):
    """Axis-aligned box [x0, y0, x1, y1] of the rotated outline, unclipped."""
    a = math.radians(part.angle)
    c, s = math.cos(a), math.sin(a)
    d = part.dims
    if part.kind == "washer":
        hx = hy = d["r_out"]
    else:
        hw, hh = d["w"] / 2, d["h"] / 2
        hx = abs(c) * hw + abs(s) * hh
        hy = abs(s) * hw + abs(c) * hh
    return [part.cx - hx, part.cy - hy, part.cx + hx, part.cy + hy]


def _local_coords(part, xs, ys):
    a = math.radians(part.angle)
    c, s = math.cos(a), math.sin(a)
    dx, dy = xs - part.cx, ys - part.cy
    u, v = c * dx + s * dy, -s * dx + c * dy
    return (-u if part.mirror else u), v


def _draw_part(img, part):
    ext = _extent(part) + 24
    x0, x1 = max(int(part.cx - ext), 0), min(int(part.cx + ext) + 1, WIDTH)
    y0, y1 = max(int(part.cy - ext), 0), min(int(part.cy + ext) + 1, HEIGHT)
    if x0 >= x1 or y0 >= y1:
        return
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    region = img[y0:y1, x0:x1]

    # Soft drop shadow from an overhead lamp slightly up-left.
    su, sv = _local_coords(part, xs - 7, ys - 9)
    shadow = np.clip(0.5 - _outline_sdf(part, su, sv) / 7.0, 0, 1) * 0.45
    region *= (1 - shadow)[:, :, None]

    u, v = _local_coords(part, xs, ys)
    sd = _part_sdf(part, u, v)
    alpha = np.clip(0.5 - sd, 0, 1)
    trng = np.random.default_rng(part.texture_seed)
    brushed = trng.standard_normal(512).astype(np.float32)
    brushed = np.convolve(brushed, np.ones(3) / 3, mode="same")
    shade = (1 + 0.05 * brushed[(v.astype(np.int32) + 256) % 512]
             + 0.12 * (trng.uniform(-1, 1) * u + trng.uniform(-1, 1) * v) / _extent(part))
    shade *= 1 - 0.3 * np.exp(np.minimum(sd, 0) / 2.5)  # darker bevelled edges
    colour = np.asarray(part.colour, np.float32)[None, None, :] * shade[:, :, None]

    p = part.defect_params
    if part.defect == "scratch":
        dist = _sd_segment(u, v, p["p"], p["q"])
        k = np.clip(1.0 - (dist - p["width"] / 2) / 1.2, 0, 1) * p["depth"]
        colour *= (1 - k)[:, :, None]
    elif part.defect == "spot":
        cu, cv, ru, rv = p["ellipse"]
        e = np.sqrt(((u - cu) / ru) ** 2 + ((v - cv) / rv) ** 2)
        k = np.clip((1.15 - e) / 0.3, 0, 1) * p["depth"]
        rust = np.array([1.0, 0.8, 0.6], np.float32)
        colour = colour * (1 - k[:, :, None]) + colour * k[:, :, None] * 0.35 * rust
        rim = np.exp(-((e - 1.25) / 0.12) ** 2) * (u - cu < 0) * 0.25  # dent highlight
        colour *= (1 + rim)[:, :, None]
    if part.code is not None:
        import part_codes  # noqa: E402  (beside this file; only marked parts need it)
        k = part_codes.darkening(part.code, lambda dx, dy: _local_coords(part, xs + dx, ys + dy))
        colour *= (1 - k)[:, :, None]

    region[:] = region * (1 - alpha[:, :, None]) + colour * alpha[:, :, None]


def render(scene):
    """Render a Scene to (uint8 HxWx3 RGB, annotations)."""
    img = _static_frame().copy()
    start = int(round(-scene.belt_offset)) % BELT_PERIOD
    img[BELT_Y0:BELT_Y1] = _belt_texture()[:, start:start + WIDTH]
    for part in scene.parts:
        _draw_part(img, part)

    ys = (np.arange(HEIGHT, dtype=np.float32)[:, None] / HEIGHT - 0.5)
    xs = (np.arange(WIDTH, dtype=np.float32)[None, :] / WIDTH - 0.5)
    light = scene.gain * (1 + scene.gradient[0] * xs + scene.gradient[1] * ys
                          - scene.vignette * (xs * xs + ys * ys) * 2)
    img *= light[:, :, None]
    img *= np.asarray(scene.tint, np.float32)

    if scene.motion_blur > 1:  # only the moving belt smears, not the rails
        n = int(scene.motion_blur)
        band = img[BELT_Y0:BELT_Y1]
        pad = np.pad(band, ((0, 0), (n // 2 + 1, n - n // 2), (0, 0)), mode="edge")
        pad[:, 0] = 0
        c = np.cumsum(pad, axis=1)
        img[BELT_Y0:BELT_Y1] = (c[:, n:n + WIDTH] - c[:, :WIDTH]) * (1.0 / n)

    if scene.focus_blur > 0.05:
        np.clip(img, 0, 255, out=img)
        img = np.asarray(Image.fromarray(img.astype(np.uint8))
                         .filter(ImageFilter.GaussianBlur(scene.focus_blur)), dtype=np.float32)
    noise_at = scene.noise_seed % (1 << 20)
    img += _noise_bank()[noise_at:noise_at + img.size].reshape(img.shape) * scene.noise
    img += 0.5
    np.clip(img, 0, 255, out=img)
    out = img.astype(np.uint8)

    annotations = []
    for part in scene.parts:
        bx0, by0, bx1, by1 = part_bbox(part)
        box = [max(bx0, 0.0), max(by0, 0.0), min(bx1, WIDTH), min(by1, HEIGHT)]
        if box[0] < box[2] and box[1] < box[3]:
            annotations.append({"label": part.label, "kind": part.kind, "defect": part.defect,
                                "bbox": [round(b, 1) for b in box],
                                "truncated": box != [bx0, by0, bx1, by1]})
    return out, annotations


def _random_colour(rng):
    steel = rng.uniform(165, 215)
    finish = rng.integers(3)
    tint = [(1.0, 1.0, 1.0), (0.96, 0.99, 1.05), (1.06, 1.0, 0.85)][finish]  # steel/zinc/brass
    return tuple(float(steel * t) for t in tint)


def _material_point(rng, part, margin):
    """A random point on solid material at least `margin` from every edge."""
    d = part.dims
    hu, hv = (d["r_out"], d["r_out"]) if part.kind == "washer" else (d["w"] / 2, d["h"] / 2)
    for _ in range(3000):
        u, v = rng.uniform(-hu, hu), rng.uniform(-hv, hv)
        if _part_sdf(part, np.float32(u), np.float32(v)) < -margin:
            return u, v
    raise RuntimeError("no room for a defect")  # geometry ranges guarantee room


def _segment_on_material(rng, part, half_range, margin=5):
    """Scratch end points lying wholly on material, clear of holes and edges,
    so the defect never merges with a hole or the outline."""
    t = np.linspace(-1, 1, 9, dtype=np.float32)
    for attempt in range(500):
        u, v = _material_point(rng, part, margin)
        a = rng.uniform(0, math.pi)
        half = rng.uniform(*half_range) * 0.9 ** (attempt // 50)
        du, dv = half * math.cos(a), half * math.sin(a)
        if np.all(_part_sdf(part, u + t * du, v + t * dv) < -margin):
            return (u - du, v - dv), (u + du, v + dv)
    raise RuntimeError("no room for a scratch")


def random_part(rng, label, cx=None, cy=None, kind=None, defect=None, angle=None, width=None):
    """A random Part of class `label` (not "empty") centred at (cx, cy).
    `kind`, `defect` and `angle` pin those instead of drawing them; `width`
    pins the width of the rotated part's bounding box in pixels."""
    family, state = label.split("_")
    if kind is None and family == "bracket":
        kind = "bracket_rect" if rng.random() < 0.5 else "bracket_l"
    angle = float(rng.uniform(-15, 15)) if angle is None else float(angle)
    ca, sa = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))

    def box_w(h, lo, hi):
        return rng.uniform(lo, hi) if width is None else (width - sa * h) / ca

    if family == "washer":
        r_out = rng.uniform(68, 88) if width is None else width / 2
        dims = {"r_out": r_out, "r_in": r_out * rng.uniform(0.38, 0.5)}
        kind, holes = "washer", []
    elif kind == "bracket_rect":
        h = rng.uniform(105, 135)
        w = box_w(h, 175, 215)
        dims, kind = {"w": w, "h": h}, "bracket_rect"
        r, ins = rng.uniform(12, 15), rng.uniform(24, 29)
        holes = [(su * (w / 2 - ins), sv * (h / 2 - ins), r) for su in (-1, 1) for sv in (-1, 1)]
    else:
        h, t = rng.uniform(140, 175), rng.uniform(58, 70)
        w = box_w(h, 170, 205)
        dims, kind = {"w": w, "h": h, "t": t}, "bracket_l"
        r = rng.uniform(12, 15)
        holes = [(w / 2 - t / 2, h / 2 - t / 2, r), (-w / 2 + t / 2, h / 2 - t / 2, r),
                 (-w / 2 + t / 2, -h / 2 + t / 2, r)]
    if not 120 <= (dims["w"] if "w" in dims else 2 * dims["r_out"]) <= 240:
        raise ValueError(f"width {width} does not fit a {kind} at {angle} degrees")
    part = Part(kind=kind, cx=0.0, cy=0.0, angle=angle, dims=dims,
                holes=holes, colour=_random_colour(rng), mirror=bool(rng.random() < 0.5),
                texture_seed=int(rng.integers(1 << 31)))
    if state == "defect":
        part.defect = DEFECTS[family][rng.integers(3)] if defect is None else defect
        p = part.defect_params
        if part.defect == "scratch":
            half = (30, 55) if family == "bracket" else (22, 32)
            p["p"], p["q"] = _segment_on_material(rng, part, half)
            p.update(width=float(rng.uniform(5, 7.5)), depth=float(rng.uniform(0.65, 0.85)))
        elif part.defect == "spot":
            if family == "bracket":  # clear of holes: a spot touching one reads as a hole
                ru, rv = rng.uniform(11, 16), rng.uniform(11, 16)
                u, v = _material_point(rng, part, max(ru, rv) + 6)
            else:  # a washer ring is narrow; the spot may graze its rim
                ru, rv = rng.uniform(9, 13), rng.uniform(9, 13)
                u, v = _material_point(rng, part, 0.8 * max(ru, rv))
            p["ellipse"] = (u, v, ru, rv)
            p["depth"] = float(rng.uniform(0.65, 0.9))
        elif part.defect == "missing_hole":
            p["hole"] = int(rng.integers(len(holes)))
        else:  # chip: a bite out of the outer rim
            a = rng.uniform(0, 2 * math.pi)
            p["chip"] = (dims["r_out"] * math.cos(a), dims["r_out"] * math.sin(a),
                         rng.uniform(16, 24))
    part.cx = float(cx) if cx is not None else 0.0
    part.cy = float(cy) if cy is not None else 0.0
    return part


def random_lighting(rng):
    """Camera/lighting conditions as Scene keyword arguments."""
    return dict(gain=float(rng.uniform(0.7, 1.3)),
                tint=tuple(float(t) for t in rng.uniform(0.93, 1.07, 3)),
                gradient=(float(rng.uniform(-0.25, 0.25)), float(rng.uniform(-0.25, 0.25))),
                vignette=float(rng.uniform(0, 0.3)),
                focus_blur=float(rng.choice([0, rng.uniform(0.3, 1.6)])),
                motion_blur=int(rng.choice([0, rng.integers(2, 14)])),
                noise=float(rng.uniform(1, 7)),
                noise_seed=int(rng.integers(1 << 31)))


def random_scene(seed, label=None):
    """Classification scene for `label` (random if None). A part class means
    that part lies entirely in view, at least EDGE_MARGIN px inside; "empty"
    is bare belt or (60%) a part cut by the left/right edge by >= MIN_CUT px,
    since a QA station only judges parts it can see whole."""
    rng = np.random.default_rng(seed)
    if label is None:
        label = CLASSES[rng.integers(len(CLASSES))]
    parts = []
    cut = label == "empty" and rng.random() < 0.6
    if label != "empty" or cut:
        part = random_part(rng, label if not cut else CLASSES[1 + rng.integers(len(CLASSES) - 1)])
        x0, y0, x1, y1 = part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        side = 1 if rng.random() < 0.5 else -1
        if cut:  # hard cases (barely cut) get half the samples
            c = rng.uniform(MIN_CUT, 60) if rng.random() < 0.5 else rng.uniform(60, 1.7 * hx)
            part.cx = float(WIDTH / 2 + side * (WIDTH / 2 + c - hx))
        elif rng.random() < 0.3:  # whole but close to an edge, to learn the boundary
            part.cx = float(WIDTH / 2 + side * (WIDTH / 2 - rng.uniform(EDGE_MARGIN, 40) - hx))
        else:
            part.cx = float(rng.uniform(hx + EDGE_MARGIN, WIDTH - hx - EDGE_MARGIN))
        part.cy = float(rng.uniform(max(hy + 4, BELT_Y0 + hy - 10),
                                    min(HEIGHT - hy - 4, BELT_Y1 - hy + 10)))
        parts.append(part)
    return Scene(parts=parts, belt_offset=float(rng.uniform(0, BELT_PERIOD)), label=label,
                 **random_lighting(rng))


def downscale(img, width, height):
    """Area (box-filter) resize, matching the plugin's preprocessing."""
    return np.asarray(Image.fromarray(img).resize((width, height), Image.BOX))


def main():
    ap = argparse.ArgumentParser(description="Write sample frames for inspection.")
    ap.add_argument("outdir")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="first scene seed")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    index = []
    for seed in range(args.seed, args.seed + args.count):
        scene = random_scene(seed)
        img, ann = render(scene)
        name = f"frame_{seed:06d}.png"
        Image.fromarray(img).save(os.path.join(args.outdir, name))
        index.append({"file": name, "seed": seed, "label": scene.label, "objects": ann})
    with open(os.path.join(args.outdir, "index.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main()
