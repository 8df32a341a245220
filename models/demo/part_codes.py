"""DataMatrix serials marked on the demo parts (make_detection_clip.py).

Each part can carry a laser-etched DataMatrix with its serial (six digits:
a 10x10 symbol), drawn by make_frames in the part's own coordinates so it
moves and turns with the part, on solid material clear of the holes, the
outline and the part's defect, on the middle row or column of the part's
box but off its centre (zxing-cpp 1.4 walks out from the view's centre
along its middle row and column to find a DataMatrix's edge). Some symbols
are turned on the part, some smudged (a grease blob that washes part of
the symbol out), one is damaged beyond reading on purpose (a third of its
modules flipped).

The shipped clip (make_detection_clip.py) carries them: 70 % dark, 4 px
modules (the largest of 3.6/3.3/3 px that fits a washer's ring), on the
part's leading side so a part entering the view shows its mark first.
Fitted on bare parts, the demo models called a readable mark a defect, so
they were fine-tuned on scenes with random_mark's marks (docs/elements.md,
torchcodes figures; models/README.md). tests/bench/codes_clip.py measures
reading (--render: a copy with other marks).

Importable:
  symbol(text)                the module matrix (bool, True = dark)
  mark(parts, depth, module)  sets each Part's code (make_frames.Part.code)
  darkening(code, local_at)   per-pixel darkening of the part's colour
  SPECS                       the clip's markings by part index
  station_mark(part, rng, sdf) a random marking as the clip's station makes
                              them (anomaly_crops.py)
  random_mark(part, rng, sdf) a random marking for training scenes (any
                              serial, turn, smudge, depth, module; a tenth
                              damaged), or None where none fits
"""
import math

import numpy as np

# Per part index of the line clip: (rotation on the part in degrees, smudge
# 0..1, damaged).
SPECS = [
    (0, 0, False), (0, 0, False), (180, 0, False), (0, 0.55, False), (45, 0, False),
    (0, 0, False), (0, 0, True), (30, 0.5, False), (0, 0, False), (180, 0, False),
    (0, 0, False), (0, 0.45, False), (270, 0, False), (0, 0, False),
]


def serial(index):
    return f"{424201 + index:06d}"


def symbol(text):
    import zxingcpp  # python3-zxing-cpp (scripts/setup.sh)
    m = np.asarray(zxingcpp.write_barcode(zxingcpp.BarcodeFormat.DataMatrix, text, 0, 0, 0, -1))
    return m < 128


def _damaged(matrix, seed):
    """A third of the data modules flipped (the finder L and timing edges
    kept): a symbol that is found but beyond its error correction."""
    rng = np.random.default_rng(seed)
    m = matrix.copy()
    inner = m[1:-1, 1:-1]
    flip = rng.random(inner.shape) < 0.34
    inner[flip] = ~inner[flip]
    return m


def _candidates(part, half):
    """Centres (u, v) in part coordinates, best first: on the box's middle
    row or column."""
    d = part.dims
    if part.kind == "washer":
        r = (d["r_in"] + d["r_out"]) / 2
        return [(r, 0.0), (-r, 0.0), (0.0, r), (0.0, -r)]
    if part.kind == "bracket_rect":  # beside the centre, so a walk from it meets an edge
        off = half + 6
        return [(off, 0.0), (-off, 0.0), (0.0, off), (0.0, -off)]
    w, h, t = d["w"], d["h"], d["t"]  # L: the upright arm at its middle, then the flat arm
    return [(-w / 2 + t / 2, 0.0), (0.0, h / 2 - t / 2), (-w / 2 + t / 2, -h / 4)]


def _inward(part):
    """More centres for the clip's washers: a little inside the ring's
    middle, where a square of the ring's width fits best (its outer corners
    bind first)."""
    if part.kind != "washer":
        return []
    r = (part.dims["r_in"] + part.dims["r_out"]) / 2
    return [(sign * (r - dr), 0.0) for dr in (0.75, 1.5, 3.0) for sign in (1, -1)]


def _leading_first(part, spots):
    """A washer's or plate's spots on its leading side (right in the frame:
    the belt runs left to right) first, so the mark is in view from the
    part's first frames (the clip's last part is never seen whole for
    long)."""
    if part.kind == "bracket_l":
        return spots
    across = 1 if part.kind == "washer" else 2  # a spot off the u axis: a plate's last

    def rank(c):
        x = -c[0] if part.mirror else c[0]
        return 0 if x > 0 else across if x == 0 else 3 - across

    return sorted(spots, key=rank)


def _clear(part, sdf, cu, cv, half, angle, margin):
    """The symbol's square, turned by `angle` (either way: the part may be
    mirrored), lies on material `margin` px from edges and holes, clear of
    the defect."""
    t = np.linspace(-half, half, 9, dtype=np.float32)
    x, y = np.meshgrid(t, t)
    for a in (math.radians(angle), -math.radians(angle)):
        uu = cu + math.cos(a) * x - math.sin(a) * y
        vv = cv + math.sin(a) * x + math.cos(a) * y
        if not np.all(sdf(part, uu, vv) < -margin):
            return False
    reach = half * (abs(math.cos(math.radians(angle))) + abs(math.sin(math.radians(angle))))
    p = part.defect_params
    if part.defect == "spot":
        du, dv, ru, rv = p["ellipse"]
        return math.hypot(du - cu, dv - cv) > reach + max(ru, rv) + margin
    if part.defect == "scratch":
        (pu, pv), (qu, qv) = p["p"], p["q"]
        for s in np.linspace(0, 1, 21):
            gap = math.hypot(pu + s * (qu - pu) - cu, pv + s * (qv - pv) - cv)
            if gap < reach + p["width"] + margin:
                return False
    if part.defect == "chip":
        du, dv, rc = p["chip"]
        return math.hypot(du - cu, dv - cv) > reach + rc + margin
    if part.defect == "missing_hole":  # the hole's site stays bare: it is the defect
        hu, hv, hr = part.holes[p["hole"]]
        return math.hypot(hu - cu, hv - cv) > reach + hr + margin
    return True


def place(part, index, sdf, depth=0.7, module=4.0):
    """The code dict for part `index` (SPECS), placed by `sdf` (make_frames'
    _part_sdf, holes included); modules of `module` px, shrunk to 2.6 px
    where a washer's ring is too narrow."""
    angle, smudge, damaged = SPECS[index % len(SPECS)]
    return _place(part, serial(index), angle, smudge, damaged, 7 + index, sdf, depth, module)


def station_mark(part, rng, sdf):
    """A mark as the line clip's station etches them (anomaly_crops.py):
    a random 6-digit serial placed as `place` places the clip's, turned
    anywhere, a third smudged, a tenth damaged; None where it finds no
    room."""
    text = str(int(rng.integers(10 ** 6))).zfill(6)
    angle = float(rng.uniform(0, 360))
    smudge = float(rng.uniform(0.4, 0.6)) if rng.random() < 0.33 else 0.0
    damaged = bool(rng.random() < 0.1)
    try:
        return _place(part, text, angle, smudge, damaged, int(rng.integers(1 << 30)), sdf)
    except RuntimeError:  # no clear spot at that turn (a narrow ring with a chip): bare
        return None


def _place(part, text, angle, smudge, damaged, seed, sdf, depth=0.7, module=4.0):
    matrix = symbol(text)
    sizes = [m for m in (module, 3.6, 3.3, 3.0, 2.8, 2.6) if m <= module]
    for size in sizes:
        half = matrix.shape[0] * size / 2
        spots = _leading_first(part, _candidates(part, half) + _inward(part))
        for (cu, cv), margin in ((s, mg) for s in spots for mg in (6, 4, 2.5, 2)):
            if _clear(part, sdf, cu, cv, half, angle, margin):
                drawn = _damaged(matrix, seed) if damaged else matrix
                return {"text": text, "u": cu, "v": cv, "module": size, "angle": float(angle),
                        "smudge": float(smudge), "damaged": damaged, "matrix": drawn,
                        "mirror": part.mirror, "depth": depth, "readable": not damaged}
    raise RuntimeError(f"no room for a code '{text}' on a {part.kind}")


def random_mark(part, rng, sdf):
    """A random marking for a training scene's part (make_detection_data,
    defect_crops with marks): a 6-8 digit serial, turned anywhere, a third
    smudged, a tenth damaged, 40-75 % dark, modules of 2.6-4 px; placed as
    `place` places the clip's; None when no spot is clear."""
    text = str(int(rng.integers(10 ** 5, 10 ** 8))).zfill(6)
    angle = float(rng.uniform(0, 360)) if rng.random() < 0.6 else float(rng.choice([0, 90, 180, 270]))
    smudge = float(rng.uniform(0.3, 0.6)) if rng.random() < 0.33 else 0.0
    damaged = bool(rng.random() < 0.1)
    depth, module = float(rng.uniform(0.4, 0.75)), float(rng.uniform(2.6, 4.0))
    matrix = symbol(text)
    order = rng.permutation(4)
    for size in (module, 3.0, 2.8, 2.6):
        if size > module:
            continue
        half = matrix.shape[0] * size / 2
        spots = _candidates(part, half)
        for k in order[:len(spots)] if len(spots) == 4 else range(len(spots)):
            cu, cv = spots[k]
            if _clear(part, sdf, cu, cv, half, angle, 2.5):
                return {"text": text, "u": cu, "v": cv, "module": size, "angle": angle,
                        "smudge": smudge, "damaged": damaged,
                        "matrix": _damaged(matrix, int(rng.integers(1 << 30))) if damaged else matrix,
                        "mirror": part.mirror, "depth": depth, "readable": not damaged}
    return None


def mark(parts, sdf, depth=0.7, module=4.0):
    """Marks every part (in order: part i gets serial(i) and SPECS[i])."""
    for i, part in enumerate(parts):
        part.code = place(part, i, sdf, depth, module)


def truth(code):
    """The part's marking for a truth file: what a reader must give (text,
    null when damaged on purpose) and how it is marked."""
    return {"format": "DataMatrix", "text": code["text"] if code["readable"] else None,
            "marked": code["text"], "modules": int(code["matrix"].shape[0]),
            "module_px": code["module"], "rotation": code["angle"],
            "smudged": code["smudge"] > 0, "damaged": code["damaged"]}


def _coverage(code, u, v):
    """Dark-module coverage 0..1 at part coordinates (u, v)."""
    a = math.radians(code["angle"])
    c, s = math.cos(a), math.sin(a)
    du, dv = u - code["u"], v - code["v"]
    if code["mirror"]:  # part coordinates are mirrored; the mark is not
        du = -du
    x, y = c * du + s * dv, -s * du + c * dv
    m = code["matrix"]
    n = m.shape[0]
    j = np.floor(x / code["module"] + n / 2).astype(np.int64)
    i = np.floor(y / code["module"] + n / 2).astype(np.int64)
    inside = (i >= 0) & (i < n) & (j >= 0) & (j < n)
    out = np.zeros(u.shape, np.float32)
    out[inside] = m[i[inside], j[inside]]
    if code.get("style") == "balanced":  # light modules lighter than the metal
        out[inside] = 2 * out[inside] - 1
    if code["smudge"] > 0:  # grease over the symbol's lower right
        r = n * code["module"] / 2
        g = np.exp(-(((x - 0.35 * r) / (0.6 * r)) ** 2 + ((y - 0.3 * r) / (0.55 * r)) ** 2))
        out *= 1 - code["smudge"] * g
    return out


def darkening(code, local_at):
    """Per-pixel darkening factor for the part region (negative: lighter,
    for a "balanced" mark whose light modules are polished brighter than
    the metal and average out with the dark ones): `local_at(dx, dy)`
    gives the part coordinates (u, v) of the region's pixels shifted by
    (dx, dy); four sub-pixel samples smooth the module edges."""
    acc = None
    for dx, dy in ((-0.25, -0.25), (0.25, -0.25), (-0.25, 0.25), (0.25, 0.25)):
        u, v = local_at(dx, dy)
        cov = _coverage(code, u, v)
        acc = cov if acc is None else acc + cov
    return acc * (code["depth"] / 4)
