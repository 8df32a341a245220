#!/usr/bin/python3
"""The motion gate's figure (issue 37 item 3; docs/tuning.md): on a belt clip
busy about 30 % of the time (tests/bench/gate_clip.py, rendered on first
use), the demo detector line with inference-gate=none and =motion:

  CPU per frame  CPU-seconds of the whole gst-launch process (all threads)
                 from its first result (the model loaded, optimised and
                 warmed up: a camera pays that once, not per frame) to its
                 end, over the frames out in that time; and the same net
                 of a decode-only run (filesrc ! jpegdec ! videoconvert),
                 which stands for the camera's own decoding;
  cameras/core   1 / (CPU-s per frame x 30 fps), and its ratio gate/none;
  recall         truth objects (demo truth format, "ignore" ones left out)
                 matched by a detection of the same class at IoU >= 0.5, over
                 every frame as it leaves torchtrack (a still frame: the
                 held tracks), parts and all classes;
  line count     torchanalytics' forward count at x = 320 against the
                 parts whose centre crosses it, and backward counts.

Variants run alternated (decode, none, motion) for --rounds rounds; the
table gives medians and the load. Not a test: figures vary with load.
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


def pipeline(args, clip, variant, jsonl, line_cfg):
    head = ["filesrc", f"location={clip}", "!", "matroskademux", "!", "jpegdec", "!",
            "videoconvert", "!", "video/x-raw,format=YUY2", "!"]
    if variant == "decode":
        return head + ["fakesink"]
    gate = ["inference-gate=motion"] + args.gate_props.split() if variant == "motion" else []
    return head + ["torchinfer", f"model={args.model}", "precision=fp32", *gate, "!",
                   "torchnms", "!", "torchtrack", "!", "torchanalytics", "reference-point=center",
                   f"config={line_cfg}", "!", "torchmetaconvert", f"location={jsonl}", "!",
                   "fakesink"]


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
    return {"recall_parts": 100.0 * hit["parts"] / max(1, total["parts"]),
            "recall_all": 100.0 * hit["all"] / max(1, total["all"]),
            "forward": gate.get("forward", 0), "backward": gate.get("backward", 0),
            "inferred": sum(1 for r in lines if r.get("inferred", True)),
            "still": sum(1 for r in lines if r.get("skip") == "still")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-gate"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models/demo/parts_detector.pt"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gate-props", default="", help="more torchinfer properties for the gate")
    args = ap.parse_args()
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
    frames = truth["num_frames"]
    cpu = {v: [] for v in ("decode", "none", "motion")}
    loads = []
    for r in range(args.rounds):
        for v in cpu:
            jsonl = os.path.join(args.out, f"{v}.jsonl")
            per_frame, total, w = run(pipeline(args, clip, v, jsonl, line_cfg), env,
                                      None if v == "decode" else jsonl, frames)
            cpu[v].append(per_frame)
            print(f"round {r + 1} {v:6s}: {1000 * per_frame:.2f} ms CPU per frame in the steady "
                  f"state ({total:.2f} s CPU in all, start-up included), wall {w:.1f} s", flush=True)
        loads.append(os.getloadavg()[0])
    q = {v: quality(os.path.join(args.out, f"{v}.jsonl"), truth) for v in ("none", "motion")}
    med = {v: statistics.median(x) for v, x in cpu.items()}
    net = {v: med[v] - med["decode"] for v in ("none", "motion")}
    print(f"\nclip: {frames} frames 640x480 @ 30 fps, busy {truth['busy_fraction']:.1%}, "
          f"{truth['line_crossings']} parts cross the line; gate props: "
          f"'inference-gate=motion {args.gate_props}'")
    print(f"machine: {ev_cpu()}, load (1 min) {min(loads):.2f}..{max(loads):.2f}, "
          f"medians of {args.rounds} alternated rounds")
    print("| gate | inferred | CPU ms/frame (all in) | cameras/core | CPU ms/frame net of decode "
          "| cameras/core net | recall parts | recall all | line count (fwd/bwd, truth) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for v in ("none", "motion"):
        print(f"| {v} | {q[v]['inferred']}/{frames} | {1000 * med[v]:.2f} | {1 / (30 * med[v]):.2f} | "
              f"{1000 * net[v]:.2f} | {1 / (30 * net[v]):.2f} | {q[v]['recall_parts']:.2f} % | "
              f"{q[v]['recall_all']:.2f} % | {q[v]['forward']}/{q[v]['backward']} "
              f"({truth['line_crossings']}) |")
    print(f"decode only (the camera): {1000 * med['decode']:.2f} ms CPU per frame")
    print(f"cameras per core, gate / none: {med['none'] / med['motion']:.2f}x all in, "
          f"{net['none'] / net['motion']:.2f}x net of decode; recall change (parts) "
          f"{q['motion']['recall_parts'] - q['none']['recall_parts']:+.2f} points, all "
          f"{q['motion']['recall_all'] - q['none']['recall_all']:+.2f}; count error "
          f"{abs(q['motion']['forward'] - truth['line_crossings']) + q['motion']['backward']} "
          f"(gate), {abs(q['none']['forward'] - truth['line_crossings']) + q['none']['backward']} "
          f"(none)")
    return 0


def ev_cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
