#!/usr/bin/python3
"""The motion gate's figure (issue 37 item 3; docs/tuning.md): on a belt clip
busy about 30 % of the time (tests/bench/gate_clip.py, rendered on first
use), the demo detector line with inference-gate=none and =motion:

  CPU per frame  CPU-seconds of the whole gst-launch process (all threads)
                 from its first result (the model loaded, optimised and
                 warmed up: a camera pays that once, not per frame) to its
                 end, over the frames out in that time; and the same net
                 of a source-only run (the source below into fakesink);
  cameras/core   1 / (CPU-s per frame x 30 fps), and its ratio gate/none;
  recall         truth objects (demo truth format, "ignore" ones left out)
                 matched by a detection of the same class at IoU >= 0.5, over
                 every frame as it leaves torchtrack (a still frame: the
                 held tracks), parts and all classes;
  line count     torchanalytics' forward count at x = 320 against the
                 parts whose centre crosses it, and backward counts.

Two sources (--source): "mjpeg" plays the rendered MJPEG clip through
jpegdec ! videoconvert (a file standing in for the camera: the decode is
paid on every frame); "raw" plays the same frames decoded once, outside the
timed runs, to a raw YUY2 file (filesrc blocksize=one frame ! rawvideoparse),
as a YUY2 factory camera delivers them: no decode, what remains is reading
the file (one copy from the page cache per frame) and parsing it. "both"
runs the two side by side. Each source has its source-only run ("src":
decode, or read and parse) for the "net" columns.

Variants run alternated (per round: for each source, src, none, motion and
any --extra-gate variants) for --rounds rounds; the table gives medians and
the load. Not a test: figures vary with load.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models", "demo"))
sys.path.insert(0, os.path.join(ROOT, "models"))
import eval_detector as ev  # noqa: E402

PART_CLASSES = {0, 1}  # bracket, washer (models/demo/parts_detector.labels)


FRAME_BYTES = 640 * 480 * 2  # one YUY2 frame of the clip


def source(kind, clip, raw):
    if kind == "raw":
        return ["filesrc", f"location={raw}", f"blocksize={FRAME_BYTES}", "!", "rawvideoparse",
                "format=yuy2", "width=640", "height=480", "framerate=30/1",
                # the colorimetry jpegdec ! videoconvert gives these frames (JPEG's
                # full-range BT.601); without it rawvideoparse announces limited range
                # and torchinfer would convert the same bytes to other RGB values
                "colorimetry=1:4:0:0", "!"]
    return ["filesrc", f"location={clip}", "!", "matroskademux", "!", "jpegdec", "!",
            "videoconvert", "!", "video/x-raw,format=YUY2", "!"]


def pipeline(args, head, gate_props, jsonl, line_cfg):
    """gate_props: None for the source-only run, "" for gate none, else the
    torchinfer properties of a motion variant."""
    if gate_props is None:
        return head + ["fakesink"]
    return head + ["torchinfer", f"model={args.model}", "precision=fp32", *gate_props.split(), "!",
                   "torchnms", "!", "torchtrack", "!", "torchanalytics", "reference-point=center",
                   f"config={line_cfg}", "!", "torchmetaconvert", f"location={jsonl}", "!",
                   "fakesink"]


def decode_raw(clip, raw, env, frames):
    """The clip's frames as raw YUY2, decoded once (not timed)."""
    if os.path.exists(raw) and os.path.getsize(raw) == frames * FRAME_BYTES:
        return
    subprocess.run(["gst-launch-1.0", "-q", *source("mjpeg", clip, raw), "filesink",
                    f"location={raw}"], env=env, check=True)
    if os.path.getsize(raw) != frames * FRAME_BYTES:
        sys.exit(f"{raw}: {os.path.getsize(raw)} bytes, expected {frames} frames")


def proc_cpu(pid):
    """CPU-seconds of a running process, all its threads (utime + stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(cmd, env, jsonl, frames):
    """CPU-seconds per frame in the steady state: from the first result
    written (model loaded, optimised, warmed up: a camera pays that once)
    to the end; the decode-only run (no jsonl) from its start."""
    if jsonl and os.path.exists(jsonl):
        os.remove(jsonl)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(["gst-launch-1.0", "-q", *cmd], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    at_first, frames_then = 0.0, 0
    while jsonl and p.poll() is None:
        if os.path.exists(jsonl) and os.path.getsize(jsonl) > 0:
            try:
                at_first = proc_cpu(p.pid)
                frames_then = sum(1 for _ in open(jsonl))
            except (OSError, IndexError):
                pass
            break
        time.sleep(0.002)
    _, err = p.communicate()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"pipeline failed ({p.returncode}): {' '.join(cmd)}\n{err}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (cpu - at_first) / (frames - frames_then), cpu, wall


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def quality(jsonl, truth):
    lines = [json.loads(l) for l in open(jsonl) if l.strip()]
    if len(lines) != truth["num_frames"]:
        sys.exit(f"{jsonl}: {len(lines)} frames out, the clip has {truth['num_frames']}")
    hit = {"parts": 0, "all": 0}
    total = {"parts": 0, "all": 0}
    for rec, tf in zip(lines, truth["frames"]):
        dets = [ev.detection_from_json(d, rec.get("width", 640), rec.get("height", 480))
                for d in rec.get("detections", [])]
        used = [False] * len(dets)
        for o in tf["objects"]:
            if o["ignore"]:
                continue
            keys = ["all"] + (["parts"] if o["class_id"] in PART_CLASSES else [])
            for k in keys:
                total[k] += 1
            best, j = 0.5, -1
            for i, d in enumerate(dets):
                if not used[i] and d[5] == o["class_id"] and iou(d[:4], o["bbox"]) >= best:
                    best, j = iou(d[:4], o["bbox"]), i
            if j >= 0:
                used[j] = True
                for k in keys:
                    hit[k] += 1
    gate = lines[-1].get("analytics", {}).get("lines", {}).get("gate", {})
    idle = sum(1 for r, tf in zip(lines, truth["frames"]) if r.get("inferred", True)
               and not any(not o["ignore"] for o in tf["objects"]))
    return {"recall_parts": 100.0 * hit["parts"] / max(1, total["parts"]),
            "idle_inferred": idle,
            "recall_all": 100.0 * hit["all"] / max(1, total["all"]),
            "forward": gate.get("forward", 0), "backward": gate.get("backward", 0),
            "inferred": sum(1 for r in lines if r.get("inferred", True)),
            "still": sum(1 for r in lines if r.get("skip") == "still")}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-gate"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models/demo/parts_detector.pt"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--source", choices=("mjpeg", "raw", "both"), default="mjpeg",
                    help="frames from the MJPEG clip (decoded per run), from a raw YUY2 file "
                         "(a YUY2 camera: no decode), or both side by side")
    ap.add_argument("--raw", action="store_const", const="raw", dest="source",
                    help="the same as --source raw")
    ap.add_argument("--gate-props", default="", help="more torchinfer properties for the gate")
    ap.add_argument("--extra-gate", action="append", default=[], metavar="PROPS",
                    help="one more motion variant with these properties (repeatable), e.g. "
                         "'motion-hold=1'; run alternated with the others")
    return ap.parse_args()


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    clip = os.path.join(args.out, "gate_clip.mkv")
    truth_path = os.path.join(args.out, "gate_clip.truth.json")
    if not (os.path.exists(clip) and os.path.exists(truth_path)):
        subprocess.run([sys.executable, os.path.join(HERE, "gate_clip.py"), args.out], check=True)
    truth = json.load(open(truth_path))
    line_cfg = os.path.join(args.out, "line.json")
    with open(line_cfg, "w") as f:
        json.dump({"lines": [{"name": "gate", "points": [[truth["line_x"], 480], [truth["line_x"], 0]],
                              "classes": ["bracket", "washer"]}]}, f)
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(args.build, "plugin"),
               GST_REGISTRY=os.path.join(args.build, "gate-registry.bin"))
    raw = os.path.join(args.out, "gate_clip.yuy2")
    if args.source != "mjpeg":
        decode_raw(clip, raw, env, truth["num_frames"])
    return clip, raw, truth, line_cfg, env


def main():
    args = parse_args()
    clip, raw, truth, line_cfg, env = prepare(args)
    frames = truth["num_frames"]
    sources = ("mjpeg", "raw") if args.source == "both" else (args.source,)
    variants = {"src": None, "none": "", "motion": f"inference-gate=motion {args.gate_props}"}
    for extra in args.extra_gate:
        variants[f"motion {extra}"] = f"inference-gate=motion {args.gate_props} {extra}"
    cpu = {(s, v): [] for s in sources for v in variants}
    loads = []
    for r in range(args.rounds):
        for (s, v) in cpu:
            jsonl = os.path.join(args.out, f"{s}-{v.replace(' ', '_')}.jsonl")
            props = variants[v]
            per_frame, total, w = run(pipeline(args, source(s, clip, raw), props, jsonl, line_cfg),
                                      env, None if props is None else jsonl, frames)
            cpu[(s, v)].append(per_frame)
            print(f"round {r + 1} {s:5s} {v:6s}: {1000 * per_frame:.2f} ms CPU per frame in the "
                  f"steady state ({total:.2f} s CPU in all, start-up included), wall {w:.1f} s, "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            loads.append(os.getloadavg()[0])
    q = {k: quality(os.path.join(args.out, f"{k[0]}-{k[1].replace(' ', '_')}.jsonl"), truth)
         for k in cpu if k[1] != "src"}
    print(f"\nclip: {frames} frames 640x480 @ 30 fps, busy {truth['busy_fraction']:.1%}, "
          f"{truth['line_crossings']} parts cross the line; gate props: "
          f"'inference-gate=motion {args.gate_props}'")
    print(f"machine: {ev_cpu()}, load (1 min) {min(loads):.2f}..{max(loads):.2f}, "
          f"medians of {args.rounds} alternated rounds")
    for s in sources:
        report(s, cpu, q, truth, [v for v in variants if v != "src"])
    return 0


def report(s, cpu, q, truth, variants):
    med = {k: statistics.median(x) for k, x in cpu.items()}
    frames, crossings = truth["num_frames"], truth["line_crossings"]
    src = med[(s, "src")]
    what = "decode" if s == "mjpeg" else "read + rawvideoparse"
    print(f"\nsource {s}: {what} only (the camera's stand-in): {1000 * src:.2f} ms CPU per frame")
    print("| source | gate | inferred (idle) | CPU ms/frame (all in) | cameras/core | CPU ms/frame "
          "net of source | cameras/core net | recall parts | recall all | line count (fwd/bwd, "
          "truth) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in variants:
        c, k = med[(s, v)], q[(s, v)]
        print(f"| {s} | {v} | {k['inferred']}/{frames} ({k['idle_inferred']}) | {1000 * c:.2f} | "
              f"{1 / (30 * c):.2f} | {1000 * (c - src):.2f} | {1 / (30 * (c - src)):.2f} | "
              f"{k['recall_parts']:.2f} % | {k['recall_all']:.2f} % | {k['forward']}/{k['backward']} "
              f"({crossings}) |")
    none = q[(s, "none")]
    for v in variants[1:]:
        k = q[(s, v)]
        per_round = statistics.median(n / g for n, g in zip(cpu[(s, "none")], cpu[(s, v)]))
        print(f"{s}, {v} / none: {med[(s, 'none')] / med[(s, v)]:.2f}x cameras all in "
              f"(median of the rounds' own ratios {per_round:.2f}x), "
              f"{(med[(s, 'none')] - src) / (med[(s, v)] - src):.2f}x net of the source; recall "
              f"change parts {k['recall_parts'] - none['recall_parts']:+.2f} points, all "
              f"{k['recall_all'] - none['recall_all']:+.2f}; count error "
              f"{abs(k['forward'] - crossings) + k['backward']} (gate), "
              f"{abs(none['forward'] - crossings) + none['backward']} (none)")


def ev_cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
