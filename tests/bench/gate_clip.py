#!/usr/bin/python3
"""Render a belt clip that is busy about 30 % of the time, for the motion
gate's figure (tests/bench/gate.sh; docs/tuning.md "Inference only where
something moved"). Generated at bench time, never shipped.

The demo line clip's renderer (models/demo/make_detection_clip.py,
make_frames.py) with its parts spaced out: 5 parts cross the 640x480 view
at 12 px per frame over 960 frames (32 s at 30 fps), two of them close
together, with empty belt between. The belt's texture stands still where
the demo clip's travels with the parts (a plain belt, or parts sliding on a
fixed bed): a textured belt that moves is motion in every frame, for this
gate as for any pixel-difference detector (set motion-threshold above its
contrast). Lighting drifts slowly,
one shadow passes over the empty belt (a change with no part: the gate
infers it), focus and sensor noise vary per frame as in the demo clip.

Writes <out>/gate_clip.mkv (MJPEG) and <out>/gate_clip.truth.json: the
demo truth format (frames[].objects with class, class_id, bbox, part,
ignore) plus "busy_fraction" (frames with any part in view) and
"line_crossings": parts whose centre crosses x = 320 left to right.
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "models", "demo")
sys.path.insert(0, DEMO)
sys.path.insert(0, os.path.dirname(DEMO))
import make_clip  # noqa: E402
import make_detection_clip as line  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402

FRAMES = 960
SPEED = line.SPEED
LINE_X = 320
# (kind, defect, frame its right edge enters the view)
PARTS = [("bracket_rect", None, 40), ("washer", "chip", 260), ("bracket_l", None, 277),
         ("washer", None, 560), ("bracket_rect", "spot", 780)]


def make_parts():
    rng = np.random.default_rng(7373)
    parts = []
    for kind, defect, enter in PARTS:
        family = "washer" if kind == "washer" else "bracket"
        label = f"{family}_{'defect' if defect else 'ok'}"
        part = md.mf.random_part(rng, label, kind=None if family == "washer" else kind,
                                 defect=defect, angle=float(rng.uniform(-12, 12)))
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        part.cx = -hx - SPEED * enter  # right edge at x = 0 on frame `enter`
        part.cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 8),
                                    min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 8)))
        parts.append(part)
    return parts


def frame_scene(parts, t):
    rng = np.random.default_rng(30_000 + t)
    gain = (1.0 + 0.03 * np.sin(2 * np.pi * t / 600.0)) * (1 - 0.25 * np.exp(-((t - 680) / 12) ** 2))
    moved = [mf.Part(**{**p.__dict__, "cx": p.cx + SPEED * t}) for p in parts]
    return mf.Scene(parts=moved, belt_offset=0.0, gain=float(gain), tint=(1.0, 0.99, 0.97),
                    gradient=(0.1, -0.06), vignette=0.15,
                    focus_blur=float(0.4 + 0.3 * rng.random()),
                    motion_blur=int(round(SPEED * line.SHUTTER)),
                    noise=float(1.0 + 0.5 * rng.random()), noise_seed=int(rng.integers(1 << 31)))


def crossings(parts, frames):
    """Parts whose centre goes from < LINE_X to >= LINE_X within the clip."""
    return sum(1 for p in parts if p.cx < LINE_X <= p.cx + SPEED * (frames - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for gate_clip.mkv and gate_clip.truth.json")
    ap.add_argument("--quality", type=int, default=80, help="JPEG quality")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    parts = make_parts()
    scenes = [frame_scene(parts, t) for t in range(FRAMES)]
    objects = [md.annotate(s) for s in scenes]
    mkv = os.path.join(args.out, "gate_clip.mkv")
    make_clip.encode((mf.render(s)[0] for s in scenes), mkv, args.quality)
    busy = sum(1 for o in objects if o) / FRAMES
    head = {"video": "gate_clip.mkv", "width": mf.WIDTH, "height": mf.HEIGHT, "fps": make_clip.FPS,
            "num_frames": FRAMES, "classes": md.CLASSES, "busy_fraction": round(busy, 4),
            "line_x": LINE_X, "line_crossings": crossings(parts, FRAMES)}
    entries = [json.dumps({"frame": i, "objects": o}) for i, o in enumerate(objects)]
    text = json.dumps(head, indent=1)[:-2] + ',\n "frames": [\n  ' + ",\n  ".join(entries) + "\n ]\n}\n"
    with open(os.path.join(args.out, "gate_clip.truth.json"), "w") as f:
        f.write(text)
    print(f"wrote {mkv}: {FRAMES} frames, busy {busy:.1%}, {head['line_crossings']} line crossings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
