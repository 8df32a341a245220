#!/usr/bin/python3
"""Render the demo clip: parts riding the conveyor through a 640x480 camera.

Writes conveyor.mkv (MJPEG in Matroska, 30 fps, 150 frames) and
conveyor.truth.json beside this script (or into --out-dir), then decodes the
file back with GStreamer to check it. If parts_classifier.pt is present, it
also reports that classifier's accuracy on the decoded frames (area-resized
to 96x96 like the plugin), i.e. what a plugin test should reproduce.

Truth per frame ("label"): the class of the part lying entirely inside the
frame, else "empty" (bare belt, or a part cut by the frame edge), the same
rule the classifier was trained on. Part sizes and positions are chosen so no
frame falls in the few-pixel band around that boundary the classifier never
saw, so every frame has one fair answer.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_frames as mf  # noqa: E402

FPS = 30
FRAMES = 150
SPEED = 34          # belt travel, pixels per frame
LEAD, CYCLE = 12, 30  # first frame with a whole part; frames between parts
SHUTTER = 0.35      # fraction of the frame interval the shutter is open
MAX_BYTES = 3_000_000
# Middle of the untrained band at the left edge: whole parts were shown with
# x0 >= EDGE_MARGIN, cut ones with x0 <= -MIN_CUT (mirrored at the right).
GAP_MID = (mf.EDGE_MARGIN - mf.MIN_CUT) / 2
# Every class, with defects that stay visible at 96x96. Width steps k put the
# frames where a part leaves half a SPEED step either side of the right band.
SEQUENCE = [("bracket_ok", "bracket_rect", None, 12), ("washer_defect", None, "chip", 13),
            ("bracket_defect", "bracket_l", "missing_hole", 12), ("washer_ok", None, None, 13),
            ("bracket_defect", "bracket_rect", "spot", 12)]


def make_parts():
    rng = np.random.default_rng(2024)
    parts = []
    for i, (label, kind, defect, k) in enumerate(SEQUENCE):
        width = mf.WIDTH - 2 * GAP_MID - SPEED - SPEED * k
        part = mf.random_part(rng, label, kind=kind, defect=defect,
                              angle=float(rng.uniform(-6, 6)), width=width)
        part.cy = float(rng.uniform(220, 260))
        # Whole in view from frame LEAD + i*CYCLE, first at x0 = GAP_MID + SPEED/2.
        part.cx = GAP_MID + SPEED / 2 + width / 2 - SPEED * (LEAD + i * CYCLE)
        parts.append(part)
    return parts


def frame_scene(parts, t):
    rng = np.random.default_rng(10_000 + t)
    moved = [mf.Part(**{**p.__dict__, "cx": p.cx + SPEED * t}) for p in parts]
    return mf.Scene(parts=moved, belt_offset=SPEED * t, gain=float(0.97 + 0.03 * rng.random()),
                    tint=(1.0, 0.99, 0.97), gradient=(0.12, -0.08), vignette=0.15,
                    focus_blur=0.5, motion_blur=int(round(SPEED * SHUTTER)), noise=2.0,
                    noise_seed=int(rng.integers(1 << 31)))


def truth(scene):
    label = "empty"
    for p in scene.parts:
        x0, _, x1, _ = mf.part_bbox(p)
        band_in = -mf.MIN_CUT < x0 < mf.EDGE_MARGIN
        band_out = mf.WIDTH - mf.EDGE_MARGIN < x1 < mf.WIDTH + mf.MIN_CUT
        if band_in or band_out:
            raise AssertionError(f"a frame has a part in the untrained edge band ({x0}, {x1})")
        if x0 >= 0 and x1 <= mf.WIDTH:
            label = p.label
    return label


def encode(frames_iter, path, quality):
    cmd = ["gst-launch-1.0", "-q", "fdsrc", "fd=0", "!",
           "rawvideoparse", "format=rgb", f"width={mf.WIDTH}", f"height={mf.HEIGHT}",
           f"framerate={FPS}/1", "!", "videoconvert", "!", "video/x-raw,format=I420", "!",
           "jpegenc", f"quality={quality}", "!", "matroskamux", "!", "filesink", f"location={path}"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    for img in frames_iter:
        proc.stdin.write(img.tobytes())
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("gst-launch-1.0 failed to encode the clip")


def decode(path):
    cmd = ["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", "matroskademux", "!",
           "jpegdec", "!", "videoconvert", "!", "video/x-raw,format=RGB", "!", "fdsink", "fd=1"]
    raw = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, mf.HEIGHT, mf.WIDTH, 3)


def check_classifier(frames, labels, model_path):
    import torch
    torch.set_num_threads(2)
    meta = json.load(open(os.path.splitext(model_path)[0] + ".json"))
    w, h = meta["input_width"], meta["input_height"]
    mean = torch.tensor(meta["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(meta["std"]).view(1, 3, 1, 1)
    x = torch.from_numpy(np.stack([mf.downscale(f, w, h) for f in frames])).permute(0, 3, 1, 2)
    x = ((x.float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        pred = torch.jit.load(model_path)(x).argmax(1).tolist()
    ok = sum(mf.CLASSES[p] == t for p, t in zip(pred, labels))
    print(f"{os.path.basename(model_path)} on decoded clip: {ok}/{len(labels)} "
          f"frames correct ({ok / len(labels):.3f})")
    wrong = [i for i, (p, t) in enumerate(zip(pred, labels)) if mf.CLASSES[p] != t]
    if wrong:
        print("  wrong at frames: " + ", ".join(f"{i} ({labels[i]}->{mf.CLASSES[pred[i]]})"
                                                for i in wrong))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    # 80 keeps the textured, noisy belt under 3 MB (85 gives ~3.5 MB).
    ap.add_argument("--quality", type=int, default=80, help="JPEG quality")
    args = ap.parse_args()
    mkv = os.path.join(args.out_dir, "conveyor.mkv")

    parts = make_parts()
    scenes = [frame_scene(parts, t) for t in range(FRAMES)]
    labels = [truth(s) for s in scenes]
    objects = []

    def frames():
        for s in scenes:
            img, ann = mf.render(s)
            objects.append(ann)
            yield img

    encode(frames(), mkv, args.quality)
    size = os.path.getsize(mkv)
    print(f"wrote {mkv}: {FRAMES} frames {mf.WIDTH}x{mf.HEIGHT} @ {FPS} fps, {size / 1e6:.2f} MB")

    entries = [json.dumps({"frame": i, "label": c, "objects": o}) for i, (c, o)
               in enumerate(zip(labels, objects))]
    head = {"video": "conveyor.mkv", "width": mf.WIDTH, "height": mf.HEIGHT, "fps": FPS,
            "num_frames": FRAMES, "classes": mf.CLASSES,
            "note": "label: class of the part lying entirely in the frame, else empty. "
                    "objects: every part at least partly in view, box [x0,y0,x1,y1] "
                    "in pixels clipped to the frame, truncated if cut by the edge"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "frames": [\n  ' + ",\n  ".join(entries) + "\n ]\n}\n"
    with open(os.path.join(args.out_dir, "conveyor.truth.json"), "w") as f:
        f.write(text)
    print("truth frames per class:", {c: labels.count(c) for c in mf.CLASSES})

    decoded = decode(mkv)
    if len(decoded) != FRAMES:
        print(f"error: decoded {len(decoded)} frames, expected {FRAMES}", file=sys.stderr)
        return 1
    print(f"decoded back {len(decoded)} frames OK")
    model = os.path.join(args.out_dir, "parts_classifier.pt")
    if os.path.exists(model):
        check_classifier(decoded, labels, model)
    if size > MAX_BYTES:
        print(f"error: clip is {size} bytes, over {MAX_BYTES}; lower --quality", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
