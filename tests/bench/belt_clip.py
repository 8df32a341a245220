"""The "belt" layout of tiles_recall.py: a rendered 12 MP clip of an
indexing conveyor (issue 37 item 4 with the motion gate).

A 4000x3000 camera at 30 fps looks down on a static bed of bare belt (a
7 x 7 mosaic of the demo renderer's scenes with their parts removed, seeds
SEED + 50_000 +) over which one lane of carriers indexes left to right.
A carrier is a whole 640x480 demo scene with its parts and defects
(models/demo/seg_data.py, held-out seeds SEED + 60_000 +; parts wholly
inside it, as the mosaics keep them; of each carrier's seeds the first
scene with MIN_PARTS = 2 or more such parts: a carrier holds parts, and
scenes are drawn whatever their defects). The lane is centred in the frame
(carrier tops at y = LANE_Y = 1260), carriers PITCH = 800 px apart (160 px
gaps), so 5 rest in view (12.8 % of the frame; the parts on them cover
PARTS_SHARE, printed). The indexer moves SPEED = 160 px a frame for MOVE = 5
frames (one pitch), then dwells DWELL = 10 frames (1/3 s); CYCLES = 3 such
cycles make FRAMES = 45 frames (1.5 s), moving on 15 of them (1/3). Frame
0 is the first frame of the first move: carriers move into view from the
left, stop, and move on; 8 carriers pass in all. No motion blur (strobed
or short exposure); every frame carries fresh sensor noise (sigma
TEMPORAL_NOISE = 2 levels) on top of each scene's own, so still belt is not
bit-identical from frame to frame, as no camera's is.

Truth per frame: each defect's box (seg_data's, mask + 2 px) moved with its
carrier and clipped to the frame; "ignore" when seg_data ignores it or less
than half of its mask is in the frame.

Disk: raw RGB, 36 MB a frame, 1.6 GB for the 45 frames (removed after the
run unless --keep).
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models", "demo"))
import make_frames as mf  # noqa: E402
import seg_data as sd  # noqa: E402

W, H = 4000, 3000
COLS, ROWS = 7, 7
FPS = 30
LANE_Y = (H - mf.HEIGHT) // 2   # 1260: carrier tops
PITCH = 800                     # carrier to carrier, px (640 carrier + 160 gap)
SPEED = 160                     # px per frame while indexing
MOVE = PITCH // SPEED           # 5 frames per index
DWELL = 10                      # frames at rest per index
CYCLES = 3
FRAMES = CYCLES * (MOVE + DWELL)  # 45
REST_X0 = 80                    # the first carrier's left edge at rest: 5 in view
TEMPORAL_NOISE = 2.0
MIN_PARTS = 2                   # a carrier holds at least this many whole parts


def moving(f):
    """Frame f shows the carriers moved since frame f - 1 (frame 0: first move)."""
    return f % (MOVE + DWELL) < MOVE


def travel(f):
    """px the lane has moved by frame f."""
    return SPEED * sum(moving(g) for g in range(f + 1))


def carrier_x(j, f):
    """Left edge of carrier j at frame f; at the first rest carriers 0..4
    sit at REST_X0 + 800 j."""
    return REST_X0 + PITCH * (j - 1) + travel(f)


def carriers(seed):
    """{j: (scene image, [(class, box in carrier px, mask, x0, y0, ignore)])}
    for every carrier in view in some frame."""
    out = {}
    for j in range(-2 * CYCLES - 2, 8):
        xs = [carrier_x(j, f) for f in range(FRAMES)]
        if not any(-mf.WIDTH < x < W for x in xs):
            continue
        for k in range(100):  # the first scene of the carrier's seeds with 2+ whole parts
            scene = sd.random_seg_scene(seed + 60_000 + 100 * (j + 10) + k)
            scene.parts = [p for p in scene.parts if inside_scene(mf.part_bbox(p))]
            if len(scene.parts) >= MIN_PARTS:
                break
        img, _ = mf.render(scene)
        inst = [(cls, sd.instance_box(x0, y0, m, mf.WIDTH, mf.HEIGHT), m, x0, y0, ign)
                for cls, x0, y0, m, ign in sd.frame_instances(scene)]
        out[j] = (img, inst, scene)
    return out


def inside_scene(box):
    return box[0] >= 0 and box[1] >= 0 and box[2] <= mf.WIDTH and box[3] <= mf.HEIGHT


def background(seed):
    """The static bed: bare demo belt scenes, 7 x 7, cut to W x H."""
    img = np.zeros((ROWS * mf.HEIGHT, COLS * mf.WIDTH, 3), np.uint8)
    for r in range(ROWS):
        for c in range(COLS):
            scene = sd.random_seg_scene(seed + 50_000 + r * COLS + c)
            scene.parts = []
            tile, _ = mf.render(scene)
            img[r * mf.HEIGHT:(r + 1) * mf.HEIGHT, c * mf.WIDTH:(c + 1) * mf.WIDTH] = tile
    return np.ascontiguousarray(img[:H, :W])


def frame_truth(cars, f):
    truth = []
    for j, (_, inst, _) in cars.items():
        ox = carrier_x(j, f)
        for k, (cls, b, m, x0, _, ign) in enumerate(inst):
            box = [max(b[0] + ox, 0), b[1] + LANE_Y, min(b[2] + ox, W), b[3] + LANE_Y]
            if box[0] >= box[2]:
                continue
            lo, hi = max(0, -(x0 + ox)), max(0, min(m.shape[1], W - (x0 + ox)))
            inside = m[:, lo:hi].sum() if lo < hi else 0
            truth.append({"class": sd.CLASSES[cls], "box": box, "id": f"{j}.{k}",
                          "ignore": bool(ign or inside < sd.MIN_IN_VIEW * m.sum())})
    return truth


def parts_share(cars):
    """Share of the frame covered by parts (their outline boxes) at rest."""
    area = 0.0
    for j, (_, _, scene) in cars.items():
        if 0 <= carrier_x(j, MOVE) and carrier_x(j, MOVE) + mf.WIDTH <= W:
            for p in scene.parts:
                b = mf.part_bbox(p)
                area += (b[2] - b[0]) * (b[3] - b[1])
    return area / (W * H)


def render(work, name, seed):
    """Writes name0.rgb .. name44.rgb into work; returns (truth per frame,
    parts share at the first rest, carriers)."""
    bed = background(seed)
    cars = carriers(seed)
    rng = np.random.default_rng(seed + 70_000)
    bank = np.round(rng.standard_normal(bed.size + (1 << 20)) * TEMPORAL_NOISE).astype(np.int16)
    truth = []
    for f in range(FRAMES):
        img = bed.copy()
        for j, (car, _, _) in cars.items():
            x = carrier_x(j, f)
            lo, hi = max(0, -x), min(mf.WIDTH, W - x)
            if lo < hi:
                img[LANE_Y:LANE_Y + mf.HEIGHT, x + lo:x + hi] = car[:, lo:hi]
        at = int(rng.integers(1 << 20))
        noisy = img.astype(np.int16) + bank[at:at + img.size].reshape(img.shape)
        np.clip(noisy, 0, 255).astype(np.uint8).tofile(os.path.join(work, f"{name}{f}.rgb"))
        truth.append(frame_truth(cars, f))
    return truth, parts_share(cars), len(cars)
