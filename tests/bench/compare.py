#!/usr/bin/python3
"""torchinfer against the alternatives (issue 8); run through compare.sh.

Approaches, on the same videotestsrc YUY2 source and the same model file.
The source's pattern (--pattern, default black) sets what it costs: a
camera hands over DMA'd frames for next to no CPU, and so does
videotestsrc pattern=black (0.2 ms a 720p frame here); pattern=ball renders
every frame (7-14 ms CPU a 720p frame here, more than most models), which
every pipeline pays and the bare loop (d) does not.
  a1, aB  torchinfer at batch 1 and batch B (gst-launch ... ! torchinfer ! fakesink,
          figures from the element's torchinfer-stats message; detection models
          add torchnms, whose torchnms-stats give the decode time)
  b       naive Python app (naive_app.py)
  c       naive C++ app (naive-app)
  d       bare libtorch loop on the optimised model (torchinfer-bench bare),
          best of batch 1 and B; throughput only (it has no source)
For each rep, for each model/size/mode, the approaches run back to back, so
machine load hits them alike; the table is medians over reps and each ratio is
the median of the per-rep ratios.
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = "/usr/bin/python3"
FIELDS = ["rep", "model", "precision", "size", "mode", "approach", "batch", "frames", "fps",
          "p50_ms", "p99_ms", "cpu_ms", "rss_mb", "run_precision"] + [
    f"{s}_{p}" for s in ("queue", "preprocess", "inference", "total", "decode")
    for p in ("p50", "p95", "p99")]
TORCHVISION = {"mobilenet_v2", "resnet18", "resnet50"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def ensure_model(name, precision, cache):
    """Path of the model file; torchvision ones are exported (random weights)
    and quantized into the cache on first use."""
    if name == "detector":
        return os.path.join(ROOT, "models/demo",
                            "parts_detector_int8.pt" if precision == "int8" else "parts_detector.pt")
    if name not in TORCHVISION:  # a path, e.g. the smoke test's tiny model
        return name
    os.makedirs(cache, exist_ok=True)
    fp32 = os.path.join(cache, f"{name}.pt")
    if not os.path.exists(fp32):
        log(f"compare: exporting {name}")
        subprocess.run([PY, "models/export.py", "torchvision", "--arch", name, "--random-weights",
                        "--out", fp32], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    if precision == "fp32":
        return fp32
    q = os.path.join(cache, f"{name}_int8.pt")
    if not os.path.exists(q):
        log(f"compare: quantizing {name}")
        subprocess.run([PY, "models/quantize.py", "--torchvision", name, "--random-frames", "24",
                        "--heldout-fraction", "0.25", "--min-top1", "0", "--max-mae", "100",
                        "--out", q], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return q


def input_size(model):
    side = json.load(open(os.path.splitext(model)[0] + ".json"))
    return side.get("input_width", 224), side.get("input_height", 224), side


def spawn(cmd, env=None):
    """Runs cmd; returns (stdout, rusage of the child)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         cwd=ROOT, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}): {' '.join(cmd)}")
    return out, ru


def keyvals(text):
    line = [l for l in text.splitlines() if l.startswith("frames=")][-1]
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split())}


def proc_cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


STAT_RE = re.compile(r"([a-z0-9-]+)=\((?:double|int|uint|guint64|gint64|int64|uint64)\)([-0-9.e+]+)")


def run_torchinfer(args, model, size, live, batch, frames):
    """gst-launch with the element's stats every 250 ms. fps and CPU per frame
    are taken between the first stats message and EOS, so model loading and
    warm-up are not counted (they are not in the naive apps' loops either)."""
    w, h = size.split("x")
    cmd = ["stdbuf", "-oL", "gst-launch-1.0", "-m", "videotestsrc", f"num-buffers={frames}",
           f"is-live={'true' if live else 'false'}", f"pattern={args.pattern}", "!",
           f"video/x-raw,format=YUY2,width={w},height={h},framerate=30/1", "!",
           "torchinfer", f"model={model}", f"batch-size={batch}", "batch-timeout=100000",
           "stats-interval=250"]
    if args.cores:
        cmd += [f"cores={args.cores}", f"threads={args.threads}"]
    # A detector's job includes decoding its boxes: torchnms, with its own stats.
    detector = input_size(model)[2].get("decoder") in ("yolov5", "yolov8", "ssd")
    if detector:
        cmd += ["!", "torchnms", "stats-interval=250"]
    cmd += ["!", "fakesink", f"sync={'true' if live else 'false'}"]
    # The load report (GST_INFO) says which precision precision=auto chose.
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(args.build, "plugin"),
               GST_DEBUG="torchinfer:4", GST_DEBUG_NO_COLOR="1")
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT, env=env)
    msgs, nms = [], None  # (arrival time, stats, process CPU seconds) per message
    for line in p.stdout:
        if "torchnms-stats" in line:
            nms = {k: float(v) for k, v in STAT_RE.findall(line)}
            continue
        if "torchinfer-stats" not in line:
            continue
        st = {k: float(v) for k, v in STAT_RE.findall(line)}
        try:
            cpu_s = proc_cpu_s(p.pid)
        except OSError:
            cpu_s = float("nan")
        msgs.append((time.monotonic(), st, cpu_s))
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not msgs:
        raise RuntimeError("torchinfer pipeline failed: " + " ".join(cmd))
    err.seek(0)
    chosen = re.search(r"; precision ([a-z0-9]+) \(", err.read())
    err.close()
    first, last = msgs[0], msgs[-1]
    st = last[1]
    # Frames inferred, not frames out: a live stream passes frames it skips.
    # Rate and CPU are taken between the first and the last message (the last
    # is posted at EOS), so loading, warm-up and teardown are not counted.
    n = st["frames-inferred"] - first[1]["frames-inferred"]
    dt = last[0] - first[0]
    if n > 0 and dt >= 0.5:
        cpu = (last[2] - first[2]) * 1000.0 / n
    else:
        # Runs shorter than a few stats intervals (smoke runs): the element's
        # own rate since its first frame, in the first message, and the whole
        # process's CPU, loading included.
        n, dt = first[1]["frames-inferred"], first[1]["frames-out"] / max(first[1]["fps"], 1e-9)
        cpu = (ru.ru_utime + ru.ru_stime) * 1000.0 / max(n, 1)
    r = {"frames": int(st["frames-inferred"]), "fps": n / dt, "p50_ms": st["total-ms-p50"],
         "p99_ms": st["total-ms-p99"], "cpu_ms": cpu, "rss_mb": ru.ru_maxrss / 1024.0,
         "run_precision": chosen.group(1) if chosen else ""}
    for s in ("queue", "preprocess", "inference", "total"):
        for q in ("p50", "p95", "p99"):
            r[f"{s}_{q}"] = st[f"{s}-ms-{q}"]
    if detector and nms is None:
        raise RuntimeError("torchnms posted no stats: " + " ".join(cmd))
    for q in ("p50", "p95", "p99"):
        r[f"decode_{q}"] = nms[f"decode-ms-{q}"] if nms else ""
    return r


def from_keyvals(out, ru):
    kv = keyvals(out)
    return {"frames": int(kv["frames"]), "fps": kv["fps"], "p50_ms": kv["p50"],
            "p99_ms": kv["p99"], "cpu_ms": kv["cpu_ms"], "rss_mb": ru.ru_maxrss / 1024.0}


def run_python(args, model, size, live, frames):
    return from_keyvals(*spawn([PY, "tests/bench/naive_app.py", model, size, str(frames),
                                "1" if live else "0", args.pattern]))


def run_cpp(args, model, size, live, frames):
    w, h, side = input_size(model)
    mean = side.get("mean", [0.485, 0.456, 0.406])
    std = side.get("std", [0.229, 0.224, 0.225])
    return from_keyvals(*spawn([os.path.join(args.build, "tests/bench/naive-app"), model, size,
                                f"{w}x{h}", str(frames), "1" if live else "0"] +
                               [str(v) for v in mean + std] + [args.pattern]))


def run_bare(args, model, precision, batch, iters):
    """The model alone at its best: a float model is timed in fp32 and bf16
    (torchinfer's precision=auto takes bf16 where it is faster), the faster
    one is kept and named in run_precision."""
    w, h, _ = input_size(model)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    best = None
    for prec in ([precision] if precision == "int8" else ["fp32", "bf16"]):
        r = from_keyvals(*spawn([os.path.join(args.build, "tests/bench/torchinfer-bench"), "bare",
                                 "--model", model, "--batch", str(batch), "--threads",
                                 str(args.threads), "--iters", str(iters), "--width", str(w),
                                 "--height", str(h), "--precision", prec], env))
        r["run_precision"] = prec
        if best is None or r["fps"] > best["fps"]:
            best = r
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="mobilenet_v2:fp32,resnet18:int8,detector:fp32",
                    help="NAME:PRECISION,... NAME = mobilenet_v2|resnet18|resnet50|detector|PATH.pt")
    ap.add_argument("--sizes", default="1280x720")
    ap.add_argument("--pattern", default="black",
                    help="videotestsrc pattern: black costs what a camera does, ball renders")
    ap.add_argument("--modes", default="fast,live")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="the batched torchinfer run (aB)")
    ap.add_argument("--frames", type=int, default=300, help="fast mode, torchinfer")
    ap.add_argument("--naive-frames", type=int, default=60, help="fast mode, naive apps")
    ap.add_argument("--live-frames", type=int, default=120)
    ap.add_argument("--naive-live-frames", type=int,
                    help="live mode, naive apps (default --live-frames); they fall behind "
                         "anyway, and at 1 fps 120 frames take minutes")
    ap.add_argument("--bare-iters", type=int, default=40)
    ap.add_argument("--cores", default="0-1", help="torchinfer cores ('' = unpinned)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", default=os.path.join(ROOT, "build/bench-models"))
    ap.add_argument("--scaling", default="", help="CSV for the batch x threads engine table")
    ap.add_argument("--scaling-batches", default="1,2,4,8")
    ap.add_argument("--scaling-threads", default="1,2")
    ap.add_argument("--scaling-iters", type=int, default=10)
    ap.add_argument("--csv", default=os.path.join(ROOT, "build/bench-compare.csv"))
    ap.add_argument("--table", metavar="CSV", help="only print the table of an earlier run")
    args = ap.parse_args()
    if args.naive_live_frames is None:
        args.naive_live_frames = args.live_frames
    if args.table:
        with open(args.table) as f:
            rows = [{k: (v if k in ("model", "precision", "size", "mode", "approach",
                                    "run_precision") else
                         float(v or "nan")) for k, v in r.items()} for r in csv.DictReader(f)]
        for r in rows:
            r["rep"], r["batch"] = int(r["rep"]), int(r["batch"])
        args.batch = max(r["batch"] for r in rows)
        print_table(rows, args)
        return

    configs = []
    for spec in args.models.split(","):
        name, _, prec = spec.partition(":")
        model = ensure_model(name, prec or "fp32", args.cache)
        configs.append((os.path.basename(name) if name.endswith(".pt") else name,
                        prec or "fp32", model))
    rows = []
    with open(args.csv, "w", newline="") as f:
        wr = csv.DictWriter(f, FIELDS)
        wr.writeheader()
        for rep in range(1, args.reps + 1):
            for name, prec, model in configs:
                for size in args.sizes.split(","):
                    for mode in args.modes.split(","):
                        live = mode == "live"
                        n_fast = args.live_frames if live else args.frames
                        n_naive = args.naive_live_frames if live else args.naive_frames
                        runs = [("a1", 1, lambda: run_torchinfer(args, model, size, live, 1, n_fast)),
                                (f"aB", args.batch,
                                 lambda: run_torchinfer(args, model, size, live, args.batch, n_fast)),
                                ("b", 1, lambda: run_python(args, model, size, live, n_naive)),
                                ("c", 1, lambda: run_cpp(args, model, size, live, n_naive))]
                        if not live:
                            runs += [("d1", 1, lambda: run_bare(args, model, prec, 1, args.bare_iters)),
                                     ("dB", args.batch, lambda: run_bare(
                                         args, model, prec, args.batch,
                                         max(1, args.bare_iters // args.batch)))]
                        for approach, batch, fn in runs:
                            r = fn()
                            r.update(rep=rep, model=name, precision=prec, size=size, mode=mode,
                                     approach=approach, batch=batch)
                            log(f"rep {rep} {name}:{prec} {size} {mode} {approach}: "
                                f"{r['fps']:.1f} fps p50 {r['p50_ms']:.1f} ms")
                            wr.writerow(r)
                            f.flush()
                            rows.append(r)
    print_table(rows, args)
    if args.scaling:
        scaling(args, configs)


def scaling(args, configs):
    """Engine-only images/s by batch x threads (torchinfer-bench table)."""
    with open(args.scaling, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["model", "precision", "batch", "threads", "fps", "p50_ms", "p99_ms"])
        for name, prec, model in configs:
            w, h, _ = input_size(model)
            out, _ = spawn([os.path.join(args.build, "tests/bench/torchinfer-bench"), "table",
                            "--model", model, "--batches", args.scaling_batches,
                            "--threads-list", args.scaling_threads, "--iters", str(args.scaling_iters),
                            "--width", str(w), "--height", str(h), "--precision", prec],
                           dict(os.environ, OMP_WAIT_POLICY="passive"))
            for line in out.splitlines():
                c = [x.strip() for x in line.strip("|").split("|")]
                if len(c) == 6 and c[1].isdigit():
                    wr.writerow([name, prec] + c[1:])
                    log(f"scaling {name}:{prec} batch {c[1]} threads {c[2]}: {c[3]} images/s")


def med(v):
    return statistics.median(v) if v else float("nan")


def print_table(rows, args):
    """Medians over reps; ratios are medians of per-rep ratios."""
    def pick(rep, model, prec, size, mode, approach):
        for r in rows:
            if (r["rep"], r["model"], r["precision"], r["size"], r["mode"], r["approach"]) == \
                    (rep, model, prec, size, mode, approach):
                return r
        return None

    keys = []
    for r in rows:
        k = (r["model"], r["precision"], r["size"], r["mode"])
        if k not in keys:
            keys.append(k)
    reps = sorted({r["rep"] for r in rows})
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end; medians of {len(reps)} interleaved reps")
    print("| model | size | mode | approach | frames/s | p50 ms | p99 ms | p99/p50 | CPU ms/frame | "
          "peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, prec, size, mode in keys:
        for ap in ("a1", "aB", "b", "c", "d1", "dB"):
            rs = [r for r in rows if (r["model"], r["precision"], r["size"], r["mode"],
                                      r["approach"]) == (model, prec, size, mode, ap)]
            if not rs:
                continue
            label = {"a1": "torchinfer b1", "aB": f"torchinfer b{args.batch}", "b": "naive Python",
                     "c": "naive C++", "d1": "bare libtorch b1",
                     "dB": f"bare libtorch b{args.batch}"}[ap]
            ran = [r.get("run_precision") or prec for r in rs]
            if any(x != prec for x in ran):  # precision=auto / the bare loop's best
                label += " (" + ", ".join(f"{x} {ran.count(x)}/{len(ran)}"
                                          for x in sorted(set(ran))) + ")"
            lat = ap[0] != "d" and mode == "live" or ap[0] == "d"
            p50, p99 = med([r["p50_ms"] for r in rs]), med([r["p99_ms"] for r in rs])
            print(f"| {model} {prec} | {size} | {mode} | {label} | {med([r['fps'] for r in rs]):.1f} | "
                  + (f"{p50:.1f} | {p99:.1f} | {med([r['p99_ms'] / r['p50_ms'] for r in rs]):.2f}"
                     if lat else "– | – | –")
                  + f" | {med([r['cpu_ms'] for r in rs]):.1f} | {med([r['rss_mb'] for r in rs]):.0f} |")
    print()
    print("| model | size | a/b fps (fast) | a/c fps (fast) | a/d fps (fast, best batch) | "
          "a p99/p50 (live, b1) | best torchinfer batch |")
    print("|---|---|---|---|---|---|---|")
    for model, prec, size, mode in keys:
        if mode != "fast":
            continue
        ab, ac, ad, jit, best = [], [], [], [], []
        for rep in reps:
            g = {ap: pick(rep, model, prec, size, "fast", ap) for ap in ("a1", "aB", "b", "c", "d1", "dB")}
            if not all(g.values()):
                continue
            a = max(g["a1"]["fps"], g["aB"]["fps"])
            best.append(1 if g["a1"]["fps"] >= g["aB"]["fps"] else args.batch)
            ab.append(a / g["b"]["fps"])
            ac.append(a / g["c"]["fps"])
            ad.append(a / max(g["d1"]["fps"], g["dB"]["fps"]))
            lv = pick(rep, model, prec, size, "live", "a1")
            if lv:
                jit.append(lv["p99_ms"] / lv["p50_ms"])
        print(f"| {model} {prec} | {size} | {med(ab):.2f}x | {med(ac):.2f}x | {med(ad):.2f} | "
              f"{med(jit):.2f} | {statistics.mode(best) if best else '–'} |")


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    main()
