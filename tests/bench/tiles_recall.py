#!/usr/bin/python3
"""Small-defect recall and CPU of inference-region=tiles vs the whole 12 MP
frame resized (issue 37 item 4's figure), with the shipped demo defect
segmentation model (models/demo/defect_seg.pt: YOLOv8-seg layout, 640x480
input, trained on the demo renderer's scenes at their own scale).

The frames: 4000x3000 RGB, each a mosaic of 7 x 7 demo scenes (640x480,
models/demo/seg_data.py: belt, 0-4 parts, a defect on 75 % of them), cut
to 4000x3000, so parts and defects are at the scale the model learnt (the
defects are 8-107 px across, scratches 5-7.5 px wide; the whole frame
resized to 640x480 shrinks them 6.25x, to 1-17 px). Parts cut by a scene's edge are left out, so no
part straddles a seam. Three layouts:
  dense  every scene holds parts (~50 defects per frame);
  nests  only 6 scenes at fixed places (NESTS) hold parts, the rest is bare
         belt: a camera over a fixture or tray, where the parts' places are
         known, so a station infers just those windows.
  belt   a 45-frame clip at 30 fps of an indexing conveyor (belt_clip.py:
         its numbers and truth): a static bed of bare belt under one lane of
         640x480 carriers (demo scenes with their parts) that move in at
         160 px a frame for 5 frames, dwell 10, and move on, 3 times: the
         scene moves on 1/3 of the frames; 5 carriers at rest cover 12.8 %
         of the frame. --frames does not apply (the clip is 45 frames);
         raw RGB, 36 MB a frame, 1.6 GB on disk while it runs.
Truth: each defect's box as seg_data gives it (mask +2 px), in frame
pixels; a defect less than half in its scene or in the frame is "ignore"
(neither counted nor a false detection when found). The frames are rendered
here, never committed (--frames, seeds 8_700_000 +; the model trained on
8_000_000 +, held out 8_500_000 +).

Each configuration runs the real plugin on the same raw frames:
  multifilesrc (raw RGB) ! torchinfer model=defect_seg.pt threads=1 [tiles]
  ! torchnms ! torchmetaconvert location=... ! fakesink
  full             the whole frame resized to the 640x480 input
  tiles-WxH        inference-region=tiles, WxH frame pixels per tile
  nests            per nest: torchinfer crop=<its 640x480 window>
                   model-instance-id=nestK ! torchnms model-instance-id=nestK
                   (the existing elements; one forward per nest)
  ...+gate         (belt) the same with inference-gate=motion (defaults:
                   threshold 8, hold 3, keyframe interval 30); the share of
                   frames and tiles inferred is read from torchinfer's
                   stats message at EOS (stats-interval, gst-launch -m):
                   frames-inferred / frames-in, regions-inferred /
                   (frames-in x tiles per frame)
  ...+gate+holdN   (--configs only) the same with motion-hold=N (0, 1)
CPU per frame: the gst-launch process's user+sys CPU (getrusage of the
child) for all --frames frames minus that for 1 frame, over frames - 1
(start-up, model load and warm-up cancel; belt: the 45 frames minus frame
0, over 44, so the first frame's inference of every tile cancels too).
Configurations alternate within
each rep; medians over --reps. Recall: a truth defect is found when a
detection of any defect class has box IoU >= --iou (0.3) with its box,
each detection matching one defect (class-agnostic; per-class counts are
printed too). False detections: detections matching no defect, counted
or ignored.

Usage: tests/bench/tiles_recall.py [--build build] [--frames 5] [--reps 3]
                                   [--layouts dense,nests,belt] [--iou 0.3] [--keep DIR]
                                   [--configs full,NAME,...]
       tests/bench/tiles_recall.py --smoke   (meson test bench-smoke-tiles-recall)
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models", "demo"))
import make_frames as mf  # noqa: E402
import seg_data as sd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import belt_clip  # noqa: E402

W, H = 4000, 3000
COLS, ROWS = 7, 7  # 7 x 640 = 4480 >= 4000, 7 x 480 = 3360 >= 3000
SEED = 8_700_000
MODEL = os.path.join(ROOT, "models", "demo", "defect_seg.pt")

# Station layout "nests": parts only in these scene cells (row, column) of
# the mosaic, the others bare belt, as a camera over a fixture or tray sees
# them; the "nests" configuration infers exactly those 640x480 windows.
NESTS = [(1, 1), (1, 3), (1, 5), (4, 1), (4, 3), (4, 5)]
TILES = ("inference-region=tiles tile-width={w} tile-height={h} tile-overlap={o} "
         "batch-size={b}")
# name -> (torchinfer properties, inferences per frame); "nests" is a chain
# of its own (nest_chain).
CONFIGS = {
    "full": ("", 1),
    "tiles-640x480": (TILES.format(w=640, h=480, o=0.1, b=7), 49),
    "tiles-960x720": (TILES.format(w=960, h=720, o=0.1, b=5), 25),
    "tiles-1280x960": (TILES.format(w=1280, h=960, o=0.1, b=8), 16),
    "tiles-2000x1500": (TILES.format(w=2000, h=1500, o=0, b=4), 4),
    "nests": (None, len(NESTS)),
    "full+gate": ("inference-gate=motion", 1),
    "tiles-640x480+gate": (TILES.format(w=640, h=480, o=0.1, b=7) + " inference-gate=motion",
                           49),
}
# belt, by --configs only: the gate's hold shortened (a strobed belt with no
# blur sees a part at rest on the frame its move ends)
for _hold in (0, 1):
    CONFIGS[f"tiles-640x480+gate+hold{_hold}"] = (
        CONFIGS["tiles-640x480+gate"][0] + f" motion-hold={_hold}", 49)
LAYOUTS = {"dense": ["full", "tiles-640x480", "tiles-960x720", "tiles-1280x960",
                     "tiles-2000x1500"],
           "nests": ["full", "nests", "tiles-640x480"],
           "belt": ["full", "full+gate", "tiles-640x480", "tiles-640x480+gate"]}
# belt: torchinfer posts its stats message once, at EOS (and never before
# in these runs), which gst-launch -m prints.
STATS = "stats-interval=3600000"


def nest_chain():
    """torchinfer crop=<nest> ! torchnms per nest, each pair by its own
    model-instance-id (torchnms decodes only its own torchinfer's result)."""
    out = []
    for k, (r, c) in enumerate(NESTS):
        out += ["torchinfer", f"model={MODEL}", "threads=1", f"model-instance-id=nest{k}",
                f"crop={c * mf.WIDTH},{r * mf.HEIGHT},{mf.WIDTH},{mf.HEIGHT}", "!",
                "torchnms", f"model-instance-id=nest{k}", "!"]
    return out


def chain(name, extra=()):
    if name == "nests":
        return nest_chain()
    return ["torchinfer", f"model={MODEL}", "threads=1", *CONFIGS[name][0].split(), *extra,
            "!", "torchnms", "!"]


def inside_scene(box):
    return box[0] >= 0 and box[1] >= 0 and box[2] <= mf.WIDTH and box[3] <= mf.HEIGHT


def render_frame(index, layout):
    """(uint8 HxWx3, truth [{"class", "box", "ignore"}]) of mosaic `index`."""
    img = np.zeros((ROWS * mf.HEIGHT, COLS * mf.WIDTH, 3), np.uint8)
    truth = []
    for r in range(ROWS):
        for c in range(COLS):
            scene = sd.random_seg_scene(SEED + index * 100 + r * COLS + c)
            # Parts wholly inside their scene: a part cut by a scene's edge
            # would sit against the next scene's belt, a seam the model
            # never saw (the frame's own edges still cut the last row/column).
            scene.parts = [p for p in scene.parts if inside_scene(mf.part_bbox(p))]
            if layout == "nests" and (r, c) not in NESTS:
                scene.parts = []
            tile, _ = mf.render(scene)
            ox, oy = c * mf.WIDTH, r * mf.HEIGHT
            img[oy:oy + mf.HEIGHT, ox:ox + mf.WIDTH] = tile
            for cls, x0, y0, m, ignore in sd.frame_instances(scene):
                b = sd.instance_box(x0, y0, m, mf.WIDTH, mf.HEIGHT)
                box = [b[0] + ox, b[1] + oy, min(b[2] + ox, W), min(b[3] + oy, H)]
                if box[0] >= W or box[1] >= H:
                    continue
                # Less than half of the mask inside the frame: ignore.
                inside = m[:max(0, min(m.shape[0], H - (y0 + oy))),
                           :max(0, min(m.shape[1], W - (x0 + ox)))].sum()
                truth.append({"class": sd.CLASSES[cls], "box": box,
                              "ignore": bool(ignore or inside < sd.MIN_IN_VIEW * m.sum())})
    return np.ascontiguousarray(img[:H, :W]), truth


def render(work, frames, layout):
    if layout == "belt":
        truth, share, cars = belt_clip.render(work, layout, SEED)
        ids = {o["id"] for t in truth for o in t if not o["ignore"]}
        print(f"belt: {cars} carriers, {len(ids)} distinct defects counted on some frame; "
              f"parts (their boxes) cover {100 * share:.1f} % of the frame at rest", flush=True)
    else:
        truth = [None] * frames
        for i in range(frames):
            img, truth[i] = render_frame(i, layout)
            img.tofile(os.path.join(work, f"{layout}{i}.rgb"))
    with open(os.path.join(work, f"{layout}.truth.json"), "w") as f:
        json.dump({"width": W, "height": H, "frames": truth}, f)
    return truth


def run(work, layout, frames, name, out):
    """(CPU seconds (user+sys) of one gst-launch over the first `frames`
    frames, torchinfer's guint64 stats at EOS (belt) or None)."""
    belt = layout == "belt"
    rate = f"{belt_clip.FPS}/1" if belt else "1/1"
    cmd = ["gst-launch-1.0", "-m" if belt else "-q", "multifilesrc",
           f"location={work}/{layout}%d.rgb", "index=0", f"stop-index={frames - 1}",
           f"caps=video/x-raw,format=RGB,width={W},height={H},framerate={rate}", "!",
           *chain(name, [STATS] if belt else []), "torchmetaconvert", f"location={out}", "!",
           "fakesink"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"pipeline failed ({name}): {(p.stdout + p.stderr)[-600:]}")
    stats = None
    for line in p.stdout.splitlines():
        if "torchinfer-stats" in line:  # the last one: at EOS
            stats = {k: int(v) for k, v in re.findall(r"([\w-]+)=\(guint64\)(\d+)", line)}
    if belt and stats is None:
        sys.exit(f"no torchinfer-stats message ({name}): {p.stdout[-600:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), stats


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    i = w * h
    return i / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i)


def score(truth, jsonl, min_iou):
    """found, counted, per-class {cls: [found, counted]}, false detections."""
    lines = [json.loads(line) for line in open(jsonl)]
    found = counted = false = 0
    per = {c: [0, 0] for c in sd.CLASSES}
    for t, frame in zip(truth, lines):
        dets = [[d["box"][k] for k in ("x_min", "y_min", "x_max", "y_max")]
                for d in frame.get("detections", []) if d.get("label") in sd.CLASSES]
        used = [False] * len(dets)
        for obj in sorted(t, key=lambda o: o["ignore"]):  # counted defects first
            best, bi = 0.0, -1
            for k, d in enumerate(dets):
                v = iou(obj["box"], d)
                if not used[k] and v > best:
                    best, bi = v, k
            hit = best >= min_iou
            if hit:
                used[bi] = True
            if not obj["ignore"]:
                counted += 1
                found += hit
                per[obj["class"]][1] += 1
                per[obj["class"]][0] += hit
        false += used.count(False)
    if len(lines) != len(truth):
        sys.exit(f"{jsonl}: {len(lines)} frames, expected {len(truth)}")
    return found, counted, per, false


def inferred_share(name, stats, tiles):
    """'frames a/b, tiles c/d (e %)' from torchinfer's stats at EOS."""
    if not stats:
        return ""
    n = stats.get("frames-in", 0)
    out = f"frames {stats.get('frames-inferred', 0)}/{n}"
    if "regions-inferred" in stats and tiles:
        out += (f", tiles {stats['regions-inferred']}/{n * tiles} "
                f"({100.0 * stats['regions-inferred'] / max(n * tiles, 1):.1f} %)")
    else:
        out += f" ({100.0 * stats.get('frames-inferred', 0) / max(n, 1):.1f} %)"
    rest = {k: v for k, v in stats.items() if v and (k.startswith("regions-") or
                                                    k.startswith("frames-skipped-"))}
    return out + "".join(f", {k} {v}" for k, v in rest.items() if k != "regions-inferred")


def bench(a, work, layout):
    names = LAYOUTS[layout]
    frames = belt_clip.FRAMES if layout == "belt" else a.frames
    t0 = time.time()
    truth = render(work, frames, layout)
    print(f"\n{layout}: rendered {frames} frames {W}x{H} in {time.time() - t0:.0f} s: "
          f"{sum(not o['ignore'] for t in truth for o in t)} defects counted, "
          f"{sum(o['ignore'] for t in truth for o in t)} ignored", flush=True)
    # Untimed, once per configuration: the registry, the frames and the
    # model into the page cache, precision=auto's choice per batch size into
    # its cache (docs/tuning.md), so no timed run pays a one-off.
    for n in names if not a.smoke else []:
        run(work, layout, 1, n, os.path.join(work, "one.jsonl"))
    cpu = {n: [] for n in names}
    stats = {}
    for rep in range(a.reps):
        for n in names:
            # (--smoke: one run each; its "CPU" includes the start-up)
            one = 0.0 if a.smoke else run(work, layout, 1, n, os.path.join(work, "one.jsonl"))[0]
            many, stats[n] = run(work, layout, frames, n,
                                 os.path.join(work, f"{layout}-{n}.jsonl"))
            cpu[n].append((many - one) / (frames - 1))
            print(f"rep {rep + 1} {n}: {cpu[n][-1] * 1000:.0f} ms/frame", flush=True)
    base = statistics.median(cpu["full"])
    print(f"\n{layout:26} {'infer':>5} {'CPU ms/frame':>12} {'x full':>7} "
          f"{'recall':>14} {'false/frame':>11}  per class (found/counted)")
    for n in names:
        f, c, per, false = score(truth, os.path.join(work, f"{layout}-{n}.jsonl"), a.iou)
        m = statistics.median(cpu[n])
        cls = " ".join(f"{k} {v[0]}/{v[1]}" for k, v in per.items())
        print(f"{n:26} {CONFIGS[n][1]:>5} {m * 1000:12.0f} {m / base:7.2f} "
              f"{100.0 * f / max(c, 1):6.1f}% {f:>3}/{c:<3} {false / frames:11.1f}  {cls}")
    for n in names:
        if stats.get(n):
            tiles = CONFIGS[n][1] if "tiles" in n else 0
            print(f"inferred ({n}, last rep, all {frames} frames): "
                  f"{inferred_share(n, stats[n], tiles)}")
    if a.smoke:  # works, not how fast: the windows find what the model finds
        f, c, _, _ = score(truth, os.path.join(work, f"{layout}-nests.jsonl"), a.iou)
        if 2 * f < c:
            sys.exit(f"smoke: the nest windows found {f} of {c} defects")
    print("CPU runs (ms/frame): " +
          "; ".join(f"{n} " + ",".join(f"{v * 1000:.0f}" for v in cpu[n]) for n in names))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iou", type=float, default=0.3)
    ap.add_argument("--layouts", default="dense,nests")
    ap.add_argument("--configs", help="comma-separated configurations instead of the "
                    "layouts' own (full first: the CPU base); names: " + ",".join(CONFIGS))
    ap.add_argument("--keep", help="keep the frames and outputs in this folder")
    ap.add_argument("--smoke", action="store_true",
                    help="a seconds-long run so the script cannot rot (meson test "
                         "bench-smoke-tiles-recall): nests layout, whole frame and nest "
                         "windows, 2 frames, 1 rep, no warm-up; never a figure")
    a = ap.parse_args()
    if a.smoke:
        a.frames, a.reps, a.layouts = 2, 1, "nests"
        LAYOUTS["nests"] = ["full", "nests"]
    if a.frames < 2:
        ap.error("--frames must be >= 2 (CPU per frame is a difference)")
    layouts = a.layouts.split(",")
    for n in layouts:
        if n not in LAYOUTS:
            ap.error(f"unknown layout {n}; known: {','.join(LAYOUTS)}")
    if a.configs:
        names = a.configs.split(",")
        if names[0] != "full" or [n for n in names if n not in CONFIGS]:
            ap.error(f"--configs: full first, then any of {','.join(CONFIGS)}")
        for n in layouts:
            LAYOUTS[n] = names
    os.environ["GST_PLUGIN_PATH"] = os.path.join(ROOT, a.build, "plugin")
    os.environ["GST_REGISTRY"] = os.path.join(tempfile.gettempdir(),
                                              "torchinfer-tiles-recall-registry.bin")
    work = a.keep or tempfile.mkdtemp(prefix="tiles_recall.")
    os.makedirs(work, exist_ok=True)
    try:
        for layout in layouts:
            bench(a, work, layout)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "?")
    print(f"CPU: {model}, {os.cpu_count()} logical; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
