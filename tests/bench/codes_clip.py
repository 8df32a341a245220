#!/usr/bin/python3
"""Code reading on the demo clip with a DataMatrix serial on every part.

Reads models/demo/line.mkv (each part carries models/demo/part_codes.py's
mark: some turned, some smudged, one damaged on purpose), or with --render
a copy with other marks (--depth, --module; the same parts, belt, lighting
and motion) rendered into OUT, through the plugin: decoded to YUY2 as the QA app does, the shipped
detector, torchnms, and torchcodes on every part box of every frame (no
tracker, so each view is read on its own and nothing is carried). Each
part box is matched to its truth part (IoU >= 0.5); prints per part and in
total the views read, right and wrong (a text other than the part's
serial; any text on the damaged one is wrong), and whether the part was
read at all (what "once per track" needs: one good view).

  tests/bench/codes_clip.py [--out DIR] [--render [--depth 0.7] [--module 4] [--keep]]

Needs build/plugin (GST_PLUGIN_PATH is set to it) and python3-zxing-cpp.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "models", "demo")
sys.path.insert(0, DEMO)
sys.path.insert(0, os.path.join(ROOT, "models"))
import make_clip  # noqa: E402
import make_detection_clip as mdc  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402
import part_codes  # noqa: E402


def render(out, depth, module):
    """The marked clip and its truth (parts[].code) in `out`."""
    parts = mdc.make_parts()
    part_codes.mark(parts, mf._part_sdf, depth, module)
    scenes = [mdc.frame_scene(parts, t) for t in range(mdc.FRAMES)]
    frame_objects = [md.annotate(s) for s in scenes]
    mkv = os.path.join(out, "line.mkv")
    make_clip.encode((mf.render(s)[0] for s in scenes), mkv, 60)
    mdc.make_deterministic(mkv)
    table = mdc.part_table(parts, frame_objects)
    for row, part in zip(table, parts):
        row["code"] = part_codes.truth(part.code)
    truth = {"video": "line.mkv", "width": mf.WIDTH, "height": mf.HEIGHT, "fps": mdc.FPS,
             "num_frames": mdc.FRAMES, "classes": md.CLASSES, "parts": table,
             "frames": [{"frame": i, "objects": o} for i, o in enumerate(frame_objects)]}
    with open(os.path.join(out, "line.truth.json"), "w") as f:
        json.dump(truth, f)
    return truth


def read_views(out, clip):
    """torchcodes on every part box of every frame; the per-frame JSON."""
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugin"))
    results = os.path.join(out, "results.jsonl")
    cmd = ["gst-launch-1.0", "-q", "filesrc", f"location={clip}", "!", "matroskademux",
           "!", "jpegdec", "!", "videoconvert", "!", "video/x-raw,format=YUY2", "!",
           "torchinfer", f"model={DEMO}/parts_detector.pt", "!",
           "torchnms", "confidence-threshold=0.5", "!",
           "torchcodes", "object-class=bracket,washer", "full-frame=never", "!",
           "torchmetaconvert", f"location={results}", "!", "fakesink"]
    subprocess.run(cmd, check=True, env=env)
    with open(results) as f:
        return [json.loads(line) for line in f if line.strip()]


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def box_of(d, width, height):
    if "box" in d:
        b = d["box"]
        return [b["x_min"], b["y_min"], b["x_max"], b["y_max"]]
    return [d["x_min"] * width, d["y_min"] * height, d["x_max"] * width, d["y_max"] * height]


def score(truth, frames):
    """Per truth part: [views, read right, read wrong]."""
    parts = {p["id"]: p for p in truth["parts"]}
    per = {i: [0, 0, 0] for i in parts}
    for rec, tf in zip(frames, truth["frames"]):
        objs = [o for o in tf["objects"] if o["class"] in ("bracket", "washer")]
        for d in rec.get("detections", rec.get("objects", [])):
            if d.get("label") not in ("bracket", "washer"):
                continue
            b = box_of(d, truth["width"], truth["height"])
            best = max(objs, key=lambda o: iou(b, o["bbox"]), default=None)
            if best is None or iou(b, best["bbox"]) < 0.5:
                continue
            s = per[best["part"]]
            s[0] += 1
            code = d.get("code")
            if code:
                s[1 if code["text"] == parts[best["part"]]["code"]["text"] else 2] += 1
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/torchinfer-codes-clip")
    ap.add_argument("--depth", type=float, default=0.7, help="how much a mark darkens the metal")
    ap.add_argument("--module", type=float, default=4.0, help="module size, pixels")
    ap.add_argument("--render", action="store_true",
                    help="read a copy marked with --depth/--module instead of the shipped clip")
    ap.add_argument("--keep", action="store_true", help="with --render: reuse OUT's clip if there")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    clip_dir = args.out if args.render else DEMO
    truth_path = os.path.join(clip_dir, "line.truth.json")
    if not args.render or (args.keep and os.path.exists(truth_path)):
        truth = json.load(open(truth_path))
    else:
        truth = render(args.out, args.depth, args.module)
    frames = read_views(args.out, os.path.join(clip_dir, "line.mkv"))
    per = score(truth, frames)
    print(f"{'part':>4} {'kind':12} {'serial':8} {'mark':22} {'views':>5} {'right':>5} "
          f"{'wrong':>5}  read")
    tot = [0, 0, 0]
    read_parts = judged = 0
    for i, (views, right, wrong) in sorted(per.items()):
        p = truth["parts"][i]
        c = p["code"]
        mark = (f"{c['module_px']}px rot {c['rotation']:.0f}" + (" smudged" if c["smudged"] else "")
                + (" damaged" if c["damaged"] else ""))
        print(f"{i:4d} {p['kind']:12} {c['marked']:8} {mark:22} {views:5d} {right:5d} {wrong:5d}  "
              f"{'yes' if right else 'no'}")
        tot = [a + b for a, b in zip(tot, (views, right, wrong))]
        if views:
            judged += 1
            read_parts += right > 0
    print(f"views: {tot[1]} of {tot[0]} read right ({100 * tot[1] / max(tot[0], 1):.1f} %), "
          f"{tot[2]} wrong; parts read on at least one view: {read_parts} of {judged}")


if __name__ == "__main__":
    sys.exit(main())
