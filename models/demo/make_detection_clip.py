#!/usr/bin/python3
"""Render the detector demo clip: a stream of parts crossing the camera.

Writes line.mkv (MJPEG in Matroska, 640x480, 30 fps, 300 frames = 10 s) and
line.truth.json beside this script (or into --out-dir), then decodes the file
back with GStreamer to check it. If parts_detector.pt is present it also
reports the detector's mAP@0.5 on the decoded frames (Python reference,
preprocessed as the plugin does) and a simple QA verdict per part.

The belt moves left to right at SPEED px per frame; 14 parts ride on it in
single file with varying height, angle and spacing, about half defective,
each defect type on both part families where the renderer allows; each
carries a DataMatrix serial (part_codes.py: some turned, some smudged, one
damaged beyond reading on purpose). Lighting
drifts slowly with two short dips (a passing shadow), focus blur and sensor
noise vary a little, and motion blur follows the belt speed.

The file is byte-deterministic: the Matroska header's random segment/track
UIDs and creation date are overwritten with fixed values after muxing.

line.truth.json:
  "parts":  every physical part: id, kind (bracket_rect, bracket_l, washer),
            class (bracket/washer), defective, defects (list of types),
            first_seen/last_seen (frames with any of it in view) and
            first_full/last_full (frames it lies entirely in view; null if
            never) -- a QA app judges parts it has seen whole, so its pass
            and reject counts are those of the parts with first_full set --
            and verdict: the QA decision it must get, "reject" if defective,
            "pass" if not, null if never seen whole (not judged); code: the
            DataMatrix serial etched on it (part_codes.py: format, text --
            what a reader must give, null on the one damaged on purpose --,
            marked, modules, module_px, rotation, smudged, damaged)
  "frames": per frame "objects": class, class_id, bbox [x0,y0,x1,y1] in
            pixels clipped to the frame, part (the physical part id, on
            every object: a defect carries the id of the part it lies on,
            inside that part's box), ignore (mostly out of view)
line.masks.json: each defect's truth mask per frame (defect_masks.py; the
pixels of line.mkv do not depend on it). --masks-only writes just that file.
The part ids are the objects' identities for tracking scores (MOTA, IDF1:
pipelines/eval/mot_metrics.h); the verdicts score a QA app's per-part decisions
(pipelines/eval/verdict_score.h). Both are read by pipelines/eval/truth_file.h.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import make_clip  # noqa: E402  (reuses its gst-launch encode/decode)
import defect_masks  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402
import part_codes  # noqa: E402

FPS = make_clip.FPS
FRAMES = 300
SPEED = 12          # belt travel, pixels per frame
SHUTTER = 0.35
MAX_BYTES = 5_000_000
# (kind, defect): both families, every defect type, OK parts between.
SEQUENCE = [("bracket_rect", None), ("washer", "chip"), ("bracket_l", "missing_hole"),
            ("washer", None), ("bracket_rect", "scratch"), ("washer", "spot"),
            ("bracket_l", None), ("bracket_rect", "spot"), ("washer", "scratch"),
            ("bracket_rect", "missing_hole"), ("washer", None), ("bracket_l", "scratch"),
            ("washer", "chip"), ("bracket_rect", None)]


def make_parts(marks=True):
    """Parts at their frame-0 positions; the first is just entering. Each
    carries its DataMatrix serial (part_codes.mark) unless marks=False."""
    rng = np.random.default_rng(4242)
    parts, right_edge = [], 40.0  # x1 of the first part at frame 0
    for kind, defect in SEQUENCE:
        family = "washer" if kind == "washer" else "bracket"
        label = f"{family}_{'defect' if defect else 'ok'}"
        part = md.mf.random_part(rng, label, kind=None if family == "washer" else kind,
                                 defect=defect, angle=float(rng.uniform(-12, 12)))
        x0, y0, x1, y1 = mf.part_bbox(part)
        hx, hy = (x1 - x0) / 2, (y1 - y0) / 2
        part.cx = right_edge - hx
        part.cy = float(rng.uniform(max(hy + 2, mf.BELT_Y0 + hy - 8),
                                    min(mf.HEIGHT - hy - 2, mf.BELT_Y1 - hy + 8)))
        parts.append(part)
        right_edge = part.cx - hx - float(rng.uniform(50, 140))  # gap to the next part
    if marks:
        part_codes.mark(parts, mf._part_sdf)
    return parts


def frame_scene(parts, t):
    rng = np.random.default_rng(20_000 + t)
    gain = 1.0 + 0.12 * np.sin(2 * np.pi * t / 170.0)
    for centre, width, depth in ((95, 14, 0.3), (215, 10, 0.22)):  # passing shadows
        gain *= 1 - depth * np.exp(-((t - centre) / width) ** 2)
    moved = [mf.Part(**{**p.__dict__, "cx": p.cx + SPEED * t}) for p in parts]
    return mf.Scene(parts=moved, belt_offset=SPEED * t, gain=float(gain),
                    tint=(1.0, 0.99, 0.97), gradient=(0.1, -0.06), vignette=0.15,
                    focus_blur=float(0.4 + 0.3 * rng.random()),
                    motion_blur=int(round(SPEED * SHUTTER)), noise=float(1.0 + 0.5 * rng.random()),
                    noise_seed=int(rng.integers(1 << 31)))


def part_table(parts, frame_objects):
    table = []
    for i, p in enumerate(parts):
        seen = [t for t, objs in enumerate(frame_objects) if any(o["part"] == i for o in objs)]
        full = []
        for t in range(FRAMES):
            x0, y0, x1, y1 = mf.part_bbox(mf.Part(**{**p.__dict__, "cx": p.cx + SPEED * t}))
            if x0 >= 0 and x1 <= mf.WIDTH and y0 >= 0 and y1 <= mf.HEIGHT:
                full.append(t)
        table.append({"id": i, "kind": p.kind, "class": "washer" if p.kind == "washer" else "bracket",
                      "defective": p.defect is not None, "defects": [p.defect] if p.defect else [],
                      "first_seen": seen[0] if seen else None, "last_seen": seen[-1] if seen else None,
                      "first_full": full[0] if full else None, "last_full": full[-1] if full else None,
                      "verdict": None if not full else "reject" if p.defect else "pass"})
        if p.code is not None:
            table[-1]["code"] = part_codes.truth(p.code)
    return table


def _ebml_patch(data, element_id, value):
    """Overwrite the payload of the first EBML element `element_id` (bytes)
    within the header with `value` (same length)."""
    at = data.find(element_id, 0, 4096)
    if at < 0:
        raise RuntimeError(f"Matroska element {element_id.hex()} not found")
    size_byte = data[at + len(element_id)]
    if size_byte != 0x80 | len(value):
        raise RuntimeError(f"Matroska element {element_id.hex()}: unexpected size byte {size_byte:#x}")
    start = at + len(element_id) + 1
    data[start:start + len(value)] = value


def make_deterministic(path):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    _ebml_patch(data, b"\x73\xa4", bytes(range(1, 17)))                 # SegmentUID
    _ebml_patch(data, b"\x44\x61", struct.pack(">q", 0))                # DateUTC: 2001-01-01
    at = data.find(b"\x73\xc5", 0, 4096)                                # TrackUID (size varies)
    if at >= 0:
        n = data[at + 2] & 0x7F
        data[at + 3:at + 3 + n] = (1).to_bytes(n, "big")
    with open(path, "wb") as f:
        f.write(data)


def check_detector(decoded, frame_objects, table, model_path):
    import torch
    import detection_metrics as dm
    import eval_detector as ev
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"
    meta = json.load(open(os.path.splitext(model_path)[0] + ".json"))
    model = torch.jit.load(model_path).eval()
    sx, sy = mf.WIDTH / meta["input_width"], mf.HEIGHT / meta["input_height"]
    dets = []
    with torch.no_grad():
        for img in decoded:
            out = model(ev.preprocess(np.ascontiguousarray(img), meta))[0]
            dets.append([ev.clip_box(x0 * sx, y0 * sy, x1 * sx, y1 * sy) + (s, c)
                         for x0, y0, x1, y1, s, c in dm.decode(out, ev.CONF, ev.IOU, ev.MAX_DET)])
    truths = [[(*o["bbox"], o["class_id"], o["ignore"]) for o in objs] for objs in frame_objects]
    ev.report(f"{os.path.basename(model_path)} on decoded clip", dets, truths)
    # QA verdict: a part is rejected if in any frame where it is whole a
    # defect scoring >= 0.5 has its centre inside the part's truth box.
    verdict_ok = 0
    for p in table:
        if p["first_full"] is None:
            continue
        hit = set()
        for t in range(p["first_full"], p["last_full"] + 1):
            box = next(o["bbox"] for o in frame_objects[t] if o["part"] == p["id"] and
                       o["class"] in md.PART_CLASSES)
            for x0, y0, x1, y1, s, c in dets[t]:
                cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                if c >= 2 and s >= 0.5 and box[0] <= cx <= box[2] and box[1] <= cy <= box[3]:
                    hit.add(md.CLASSES[c])
        verdict_ok += bool(hit) == p["defective"]
        print(f"  part {p['id']:2d} {p['kind']:12s} truth {p['defects'] or 'ok'}  "
              f"detected {sorted(hit) or 'ok'}")
    judged = sum(p["first_full"] is not None for p in table)
    print(f"QA verdict (defect score >= 0.5 inside the part while whole): "
          f"{verdict_ok}/{judged} parts right")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--quality", type=int, default=60, help="JPEG quality")
    ap.add_argument("--masks-only", action="store_true", help="write line.masks.json only")
    args = ap.parse_args()
    mkv = os.path.join(args.out_dir, "line.mkv")

    parts = make_parts()
    scenes = [frame_scene(parts, t) for t in range(FRAMES)]
    frame_objects = [md.annotate(s) for s in scenes]
    n = defect_masks.write_clip_masks(os.path.join(args.out_dir, "line.masks.json"), "line.mkv",
                                      scenes, frame_objects, md.CLASSES)
    print(f"wrote line.masks.json: {n} defect masks")
    if args.masks_only:
        return 0

    def frames():
        for s in scenes:
            yield mf.render(s)[0]

    make_clip.encode(frames(), mkv, args.quality)
    make_deterministic(mkv)
    size = os.path.getsize(mkv)
    print(f"wrote {mkv}: {FRAMES} frames {mf.WIDTH}x{mf.HEIGHT} @ {FPS} fps, {size / 1e6:.2f} MB")

    table = part_table(parts, frame_objects)
    head = {"video": "line.mkv", "width": mf.WIDTH, "height": mf.HEIGHT, "fps": FPS,
            "num_frames": FRAMES, "classes": md.CLASSES, "belt_speed_px_per_frame": SPEED,
            "note": "parts: every physical part; first_full/last_full: frames it lies entirely "
                    "in view (null: never); verdict: the QA decision (reject iff defective; null: "
                    "never seen whole, not judged). frames[].objects: bbox [x0,y0,x1,y1] pixels "
                    "clipped to the frame; part: physical part id, the object's identity for "
                    "tracking (a defect carries its part's id and lies inside its box); "
                    "ignore: mostly out of view (not scored); code: the part's DataMatrix "
                    "(text: what a reader must give, null when damaged on purpose; marked: the "
                    "serial etched; how it is marked)",
            "parts": table}
    entries = [json.dumps({"frame": i, "objects": o}) for i, o in enumerate(frame_objects)]
    text = json.dumps(head, indent=1)[:-2] + ',\n "frames": [\n  ' + ",\n  ".join(entries) + "\n ]\n}\n"
    with open(os.path.join(args.out_dir, "line.truth.json"), "w") as f:
        f.write(text)
    judged = [p for p in table if p["first_full"] is not None]
    print(f"{len(table)} parts, {len(judged)} seen whole: "
          f"{sum(not p['defective'] for p in judged)} OK, {sum(p['defective'] for p in judged)} defective")

    decoded = make_clip.decode(mkv)
    if len(decoded) != FRAMES:
        print(f"error: decoded {len(decoded)} frames, expected {FRAMES}", file=sys.stderr)
        return 1
    print(f"decoded back {len(decoded)} frames OK")
    model = os.path.join(args.out_dir, "parts_detector.pt")
    if os.path.exists(model):
        check_detector(decoded, frame_objects, table, model)
    if size > MAX_BYTES:
        print(f"error: clip is {size} bytes, over {MAX_BYTES}; lower --quality", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
