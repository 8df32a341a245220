#!/usr/bin/python3
"""Evidence figures (issue 27 item 4; docs/evidence.md).

1. One camera's ring at 1920x1080 YUY2 30 fps, per encoder: the demo clip
   scaled to 1080p and re-encoded as MJPEG once (a camera's MJPEG), decoded
   and paced at 30 fps (identity sync=true), then
     SOURCE ! tee ! fakesink                       (none: the camera alone)
     SOURCE ! tee ! fakesink + the recorder branch (jpeg, h264)
   (build/tests/bench/evidence-ring-bench). Process CPU from the first frame
   to EOS; the ring's cost is the difference to `none`, as cores (CPU
   seconds per second of video) and ms per frame; bytes/s of the encoder and
   the ring's peak bytes (pre 2 s + post 1 s + 1 s margin, as the QA app).
   Arms alternate, medians over --reps.
2. torchinfer-qa-line on models/demo/line.mkv with and without --evidence,
   alternated: process CPU (getrusage of the child), ratio; with it, every
   reject's snapshot, crop and clip decoded by gst-launch-1.0, and each
   clip's length against pre_s + post_s.

Run from the repository root after `ninja -C build`:
  /usr/bin/python3 tests/bench/evidence_ring.py --build build --reps 3
(--only ring / --only qa for one part; --cache DIR keeps the 1080p clip.)
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_bench(bench, source, encoder, out_dir, events_every=0):
    shutil.rmtree(out_dir, ignore_errors=True)
    args = [bench, source, encoder, out_dir]
    if events_every:
        args.append(str(events_every))
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def make_1080p(root, cache):
    path = os.path.join(cache, "line_1080p.mkv")
    if not os.path.exists(path):
        subprocess.run(
            ["gst-launch-1.0", "-q", "filesrc", "location=" + os.path.join(root, "models/demo/line.mkv"),
             "!", "matroskademux", "!", "jpegdec", "!", "videoconvert", "!", "videoscale", "!",
             "video/x-raw,width=1920,height=1080", "!", "jpegenc", "quality=90", "!",
             "matroskamux", "!", "filesink", "location=" + path], check=True)
    return path


def ring_figures(args, cache):
    bench = os.path.join(args.build, "tests/bench/evidence-ring-bench")
    clip = make_1080p(args.root, cache)
    source = ("filesrc location=%s ! matroskademux ! jpegdec ! videoconvert ! "
              "video/x-raw,format=YUY2 ! identity sync=true" % clip)
    arms = ["none", "jpeg", "h264"]
    runs = {a: [] for a in arms}
    runs["jpeg+events"] = []
    for _ in range(args.reps):
        for a in arms:
            runs[a].append(run_bench(bench, source, a, os.path.join(cache, "ring")))
        runs["jpeg+events"].append(
            run_bench(bench, source, "jpeg", os.path.join(cache, "ring"), events_every=2))
    base = statistics.median(r["cpu_s"] for r in runs["none"])
    rows = []
    for a, rs in runs.items():
        cpu = statistics.median(r["cpu_s"] for r in rs)
        wall = statistics.median(r["wall_s"] for r in rs)
        frames = rs[0]["frames"]
        row = {"arm": a, "cpu_s": cpu, "wall_s": wall, "frames": frames,
               "cores": cpu / wall, "cpu_ratio_vs_none": cpu / base}
        if a != "none":
            encoded = statistics.median(r["frames_encoded"] for r in rs)
            row["frames_encoded"] = encoded
            row["ring_cores"] = (cpu - base) / wall
            # Per frame the encoder took: a loaded machine makes the queue
            # drop frames (counted), which would flatter a slow encoder.
            row["ring_ms_per_frame"] = (cpu - base) * 1000 / max(encoded, 1)
            row["bytes_per_s"] = statistics.median(r["bytes_encoded"] / r["wall_s"] for r in rs)
            row["ring_peak_bytes"] = statistics.median(r["ring_peak_bytes"] for r in rs)
            row["queue_dropped"] = statistics.median(r["queue_dropped"] for r in rs)
            row["clips"] = rs[0]["clips"]
            row["clip_seconds"] = rs[0]["clip_seconds"]
        rows.append(row)
    print("1080p30 YUY2, one camera, %d reps (medians):" % args.reps)
    for r in rows:
        extra = ""
        if r["arm"] != "none":
            extra = ("  ring %.3f cores (%.1f ms per frame encoded), %.2f MB/s, peak %.1f MB, "
                     "%d of %d frames encoded, %d dropped" %
                     (r["ring_cores"], r["ring_ms_per_frame"], r["bytes_per_s"] / 1e6,
                      r["ring_peak_bytes"] / 1e6, r["frames_encoded"], r["frames"],
                      r["queue_dropped"]))
        print("  %-12s CPU %.2f s over %.1f s (%.3f cores, x%.2f vs none)%s" %
              (r["arm"], r["cpu_s"], r["wall_s"], r["cores"], r["cpu_ratio_vs_none"], extra))
    return rows


def child_cpu():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def run_qa(args, evidence_dir=None):
    cmd = [os.path.join(args.build, "pipelines/torchinfer-qa-line"), "--clip",
           os.path.join(args.root, "models/demo/line.mkv"), "--quiet"]
    if evidence_dir:
        shutil.rmtree(evidence_dir, ignore_errors=True)
        cmd += ["--evidence", evidence_dir]
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(args.build, "plugin"))
    c0, w0 = child_cpu(), time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    cpu, wall = child_cpu() - c0, time.monotonic() - w0
    if p.returncode != 0:
        sys.exit("qa-line exit %d: %s" % (p.returncode, p.stderr[-2000:]))
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    return cpu, wall, lines


def decodes(path, jpeg):
    pipe = (["filesrc", "location=" + path, "!", "jpegdec", "!", "fakesink"] if jpeg else
            ["filesrc", "location=" + path, "!", "decodebin", "!", "fakesink"])
    return subprocess.run(["gst-launch-1.0", "-q"] + pipe, capture_output=True).returncode == 0


def qa_figures(args, cache):
    ev_dir = os.path.join(cache, "qa-evidence")
    without, with_ev = [], []
    lines = None
    for _ in range(args.reps):
        without.append(run_qa(args)[0])
        cpu, _, lines = run_qa(args, ev_dir)
        with_ev.append(cpu)
    a, b = statistics.median(without), statistics.median(with_ev)
    print("torchinfer-qa-line on line.mkv (640x480, 300 frames), %d reps (medians): "
          "CPU %.2f s without --evidence, %.2f s with (x%.3f)" % (args.reps, a, b, b / a))
    rejects = [l for l in lines if l.get("event") == "part" and l["verdict"] == "reject"]
    summary = lines[-1]["evidence"]
    ok_snap = sum(decodes(r["evidence"]["snapshot"], True) for r in rejects)
    ok_crop = sum(decodes(r["evidence"]["crop"], True) for r in rejects)
    ok_clip = sum(decodes(r["evidence"]["clip"], False) for r in rejects)
    asked = 3.0
    lengths = []
    for r in rejects:
        rec = json.load(open(r["evidence"]["clip"].replace("-clip.mkv", "-event.json")))
        lengths.append((r["part"], r["reason"], rec["clip_seconds"]))
    print("  %d rejects: %d snapshots, %d crops, %d clips decode; summary %s" %
          (len(rejects), ok_snap, ok_crop, ok_clip, json.dumps(summary)))
    print("  clip length vs asked (%.1f s): %s" % (asked, ", ".join(
        "#%d %s %.3f s" % l for l in lengths)))
    return {"cpu_without_s": a, "cpu_with_s": b, "ratio": b / a, "rejects": len(rejects),
            "snapshots_decoded": ok_snap, "crops_decoded": ok_crop, "clips_decoded": ok_clip,
            "clip_seconds": lengths, "asked_s": asked, "summary": summary}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--root", default=".")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--only", choices=["ring", "qa"], help="one of the two parts")
    args = ap.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="evidence-ring-")
    os.makedirs(cache, exist_ok=True)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"],
                         capture_output=True, text=True).stdout.strip()
    print("CPU: %s, %d cores; load average %.1f at the start" %
          (cpu, os.cpu_count(), os.getloadavg()[0]), flush=True)
    figures = {"cpu": cpu}
    if args.only != "qa":
        figures["ring"] = ring_figures(args, cache)
    if args.only != "ring":
        figures["qa"] = qa_figures(args, cache)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    if not args.cache:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
