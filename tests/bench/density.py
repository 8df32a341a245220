#!/usr/bin/python3
"""Camera density (issue 16, item 1): how many live 1920x1080 YUY2 30 fps
cameras one process serves with one shared model, and how close that is to
the compute bound.

A probe runs N cameras in one gst-launch, each
  videotestsrc num-buffers=1 ! YUY2 1080p ! imagefreeze is-live=true
      ! torchinfer model-instance-id=density batch-size=B [! torchnms] ! fakesink
imagefreeze re-sends its one frame at 30 fps without touching the pixels:
like a camera handing frames over by DMA, the source costs next to no CPU.
Each camera has its own frame in memory (N x 4 MB), so beyond a few cameras
preprocessing reads frames that are not in cache, as it would from a camera.
The cameras are phase-aligned (same clock, same start): the best case for
batching across cameras.

A probe passes when >= --min-inferred of all frames in were inferred and the
worst camera's p99 frame-in -> frame-out latency of torchinfer is <= --max-p99
ms. N doubles until a probe fails, then bisects: density = the largest N that
passed.

Compute bound: cores x 1000 ms / (30 fps x per-frame cost), the per-frame
cost being preprocessing (p50 of one camera alone, from the element's stats)
+ forward per frame at batch B on one pinned thread (torchinfer-bench loop,
p50 / B) + decode (torchnms p50, one camera alone); the bound is taken at
the batch where it is highest.

Saturated bound (--saturated-n N, issue 24's definition): N cameras with
drop-policy=block, so every frame is inferred and the cores stay busy; the
all-in CPU per frame (every thread of the process: sources, preprocessing,
forward, decode, spinning) is the CPU time of a long run minus a short one
over the frames between them, which cancels loading and warm-up; bound =
cores x 1000 ms / (30 fps x that). It counts what the process really
spends per frame, where the first bound adds up parts measured alone.

Cores used: the process's CPU time over wall time in each probe's steady
state (after 2 s). At the first N that fails it shows whether frames were
skipped with cores to spare (item 2: skips only when the CPU is saturated)
or because every core was busy.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (model export rules, stats parsing)

ROOT = compare.ROOT
STAT_RE = compare.STAT_RE
SRC_RE = re.compile(r'from element "([^"]+)"')


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def is_detector(model):
    return compare.input_size(model)[2].get("decoder") in ("yolov5", "yolov8", "ssd")


def probe(args, model, batch, n, frames):
    """One run of n cameras; returns inferred fraction, worst p99 and the
    element stats summed over cameras."""
    detector = is_detector(model)
    cmd = ["stdbuf", "-oL", "gst-launch-1.0", "-m"]
    for i in range(n):
        cmd += ["videotestsrc", "num-buffers=1", "pattern=black", "!",
                "video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1", "!",
                "imagefreeze", "is-live=true", f"num-buffers={frames}", "!",
                "torchinfer", f"name=ti{i}", f"model={model}",
                f"model-instance-id=density{i % args.instances}",
                f"batch-size={batch}", "stats-interval=100000000"]
        if args.cores:
            cores, threads = instance_cores(args, i % args.instances)
            cmd += [f"cores={cores}", f"threads={threads}"]
        cmd += args.extra.split()
        if detector:
            cmd += ["!", "torchnms", f"name=nms{i}", "stats-interval=100000000"]
        cmd += ["!", "fakesink", "sync=true"]
    # A registry per build: with one shared registry, a second build's plugin
    # of the same name is not loaded (A/B between two builds).
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(args.build, "plugin"),
               GST_REGISTRY=os.path.join(args.build, "density-registry.bin"))
    rc, stdout, wall, cores_used = run_sampled(cmd, env)
    if rc != 0:
        raise RuntimeError(f"density probe failed ({rc}): n={n} batch={batch} {model}")
    last, nms = {}, {}
    for line in stdout.splitlines():
        src = SRC_RE.search(line)
        if not src:
            continue
        if "torchinfer-stats" in line:
            last[src.group(1)] = {k: float(v) for k, v in STAT_RE.findall(line)}
        elif "torchnms-stats" in line:
            nms[src.group(1)] = {k: float(v) for k, v in STAT_RE.findall(line)}
    if len(last) != n:
        raise RuntimeError(f"{len(last)} of {n} cameras posted stats: {model} batch {batch}")
    tot = lambda k: sum(s[k] for s in last.values())  # noqa: E731
    worst = lambda k: max(s[k] for s in last.values())  # noqa: E731
    med = lambda k: sorted(s[k] for s in last.values())[n // 2]  # noqa: E731
    r = {"n": n, "batch": batch, "frames_in": tot("frames-in"),
         "inferred": tot("frames-inferred"), "dropped": tot("frames-dropped"),
         "inferred_frac": tot("frames-inferred") / max(tot("frames-in"), 1),
         "p99_ms": worst("total-ms-p99"), "p50_ms": med("total-ms-p50"),
         "queue_p50": med("queue-ms-p50"), "preprocess_p50": med("preprocess-ms-p50"),
         "inference_p50": med("inference-ms-p50"), "mean_batch_fill": med("mean-batch-fill"),
         "decode_p50": (sorted(s["decode-ms-p50"] for s in nms.values())[len(nms) // 2]
                        if nms else 0.0),
         "wall_s": wall, "cores_used": cores_used, "load": os.getloadavg()[0]}
    r["pass"] = r["inferred_frac"] >= args.min_inferred and r["p99_ms"] <= args.max_p99
    log(f"density: {os.path.basename(model)} b{batch} n={n}: inferred "
        f"{100 * r['inferred_frac']:.1f}% p99 {r['p99_ms']:.1f} ms fill {r['mean_batch_fill']:.2f}"
        f" cores used {cores_used:.2f} -> {'pass' if r['pass'] else 'fail'} (load {r['load']:.1f})")
    return r


def run_sampled(cmd, env, settle_s=2.0, every_s=0.25):
    """Runs cmd; returns (rc, stdout, wall s, cores used). Cores used = the
    process's CPU time (all threads, /proc/PID/stat) over wall time from
    settle_s after the start (the model is loaded and warmed by then) to the
    last sample before it exited: what the cameras cost in steady state."""
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         cwd=ROOT, env=env)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    first = last = None
    while p.poll() is None:
        time.sleep(every_s)
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            break
        sample = (time.monotonic(), (int(fields[11]) + int(fields[12])) / tick)
        if sample[0] - t0 < settle_s:
            continue
        first = first or sample
        last = sample
    p.wait()
    reader.join()
    wall = time.monotonic() - t0
    used = (last[1] - first[1]) / (last[0] - first[0]) if first and last[0] > first[0] else 0.0
    return p.returncode, out[0] if out else "", wall, used


def saturated_ms_per_frame(args, model, batch, n):
    """All-in CPU ms per inferred frame, n cameras at drop-policy=block:
    (CPU of a 3x run - CPU of a 1x run) / (frames of 3x - frames of 1x)."""
    import resource
    extra = args.extra
    args.extra = f"{extra} drop-policy=block".strip()
    got = []
    try:
        for k in (1, 3):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = probe(args, model, batch, n, int(args.duration * 30 * k))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            got.append((cpu, r["inferred"]))
    finally:
        args.extra = extra
    (c1, f1), (c3, f3) = got
    return 1000.0 * (c3 - c1) / max(f3 - f1, 1)


def instance_cores(args, k):
    """--instances K splits --cores into K equal runs, instance k taking
    the k-th, with --threads / K threads."""
    cpus = []
    for part in args.cores.split(","):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    per = max(1, len(cpus) // args.instances)
    mine = cpus[k * per:(k + 1) * per] or cpus[-per:]
    return ",".join(map(str, mine)), max(1, args.threads // args.instances)


def search(args, model, batch):
    frames = int(args.duration * 30)
    probes = {}
    def run(n):
        if n not in probes:
            probes[n] = probe(args, model, batch, n, frames)
        return probes[n]["pass"]
    good, bad = 0, None
    n = max(1, args.start)
    while n <= args.max_n:
        if run(n):
            good = n
            n *= 2
        else:
            bad = n
            break
    if bad is None:
        bad = args.max_n + 1
        if good < args.max_n and run(args.max_n):
            good = args.max_n
    while bad - good > 1:
        mid = (good + bad) // 2
        if run(mid):
            good = mid
        else:
            bad = mid
    return good, probes


def ab(args):
    """The same N cameras on two builds, interleaved: inferred share and p99."""
    builds = args.ab.split(",")
    rows = []
    for spec in args.models.split(","):
        name, precision = spec.split(":") if ":" in spec else (spec, "fp32")
        model = compare.ensure_model(name, precision, args.cache)
        for b in [int(x) for x in args.batches.split(",")]:
            got = {k: [] for k in builds}
            extra = args.extra
            for _ in range(args.reps):
                for build in builds:
                    # BUILD or BUILD|PROPS: the same build with other element properties
                    args.build, _, props = build.partition("|")
                    args.extra = f"{extra} {props}".strip()
                    got[build].append(probe(args, model, b, args.ab_n, int(args.duration * 30)))
            args.extra = extra
            rows.append((f"{name} {precision}", b, got))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    print(f"machine: {machine()}; {args.ab_n} cameras; medians of {args.reps} interleaved runs; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print("| model | batch | build | inferred | worst p99 ms | mean batch fill |")
    print("|---|---|---|---|---|---|")
    for m, b, got in rows:
        for build, rs in got.items():
            print(f"| {m} | {b} | {build} | {100 * med([r['inferred_frac'] for r in rs]):.1f} % | "
                  f"{med([r['p99_ms'] for r in rs]):.0f} | "
                  f"{med([r['mean_batch_fill'] for r in rs]):.2f} |")


def forward_ms_per_frame(args, model, precision, batch):
    """Forward cost of one frame in core-ms: one thread pinned to one core;
    the median of three loops, since one loop's p50 swings by up to 1.7x
    from run to run on a shared machine."""
    w, h, _ = compare.input_size(model)
    core = (args.cores or "0").split(",")[0].split("-")[0]
    p50s = []
    for _ in range(3):
        out = subprocess.run(
            [os.path.join(args.build, "tests/bench/torchinfer-bench"), "loop", "--model", model,
             "--batch", str(batch), "--threads", "1", "--cores", core, "--iters",
             str(args.fwd_iters), "--width", str(w), "--height", str(h), "--precision",
             precision],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
            check=True).stdout
        p50s.append(compare.keyvals(out)["p50"])
    return sorted(p50s)[1] / batch


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cache", default=os.path.join(ROOT, "build/bench-models"))
    ap.add_argument("--models", default="detector:fp32,resnet18:int8")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per probe")
    ap.add_argument("--start", type=int, default=4, help="first N probed")
    ap.add_argument("--max-n", type=int, default=64)
    ap.add_argument("--min-inferred", type=float, default=0.99)
    ap.add_argument("--max-p99", type=float, default=100.0)
    ap.add_argument("--cores", default="0-1", help="torchinfer cores= (and threads=)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--instances", type=int, default=1,
                    help="K model instances (model-instance-id density0..K-1), camera i on "
                         "instance i mod K, each pinned to its 1/K of --cores with "
                         "--threads / K threads")
    ap.add_argument("--extra", default="",
                    help="more torchinfer properties, e.g. preprocess-on=streaming-thread")
    ap.add_argument("--fwd-iters", type=int, default=30)
    ap.add_argument("--saturated-n", type=int, default=0,
                    help="also measure the saturated bound with N cameras at drop-policy=block "
                         "(0: not measured)")
    ap.add_argument("--json", default=os.path.join(ROOT, "build/bench-density.json"))
    ap.add_argument("--plots", default="", help="folder for density.png (none: no plot)")
    ap.add_argument("--ab", default="",
                    help="BUILD_A,BUILD_B: instead of the search, probe --ab-n cameras with each "
                         "build in turn (A/B/A/B, --reps times) for every model and batch; "
                         "BUILD|PROPS adds torchinfer properties to that side, e.g. "
                         "'build|preprocess-on=streaming-thread,build'")
    ap.add_argument("--ab-n", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--replot", default="",
                    help="JSON[,JSON...]: plot earlier runs (each labelled with its --extra, "
                         "e.g. lanes=2) together into --plots instead of measuring")
    args = ap.parse_args()
    if args.ab:
        return ab(args)
    if args.replot:
        return replot(args.replot.split(","), args.plots)
    ncores = len(os.sched_getaffinity(0))
    results = []
    log(f"density: load at start {os.getloadavg()[0]:.1f}")
    for spec in args.models.split(","):
        name, precision = spec.split(":") if ":" in spec else (spec, "fp32")
        model = compare.ensure_model(name, precision, args.cache)
        # One camera alone: preprocessing and decode per frame, uncontended.
        one = probe(args, model, 1, 1, int(min(args.duration, 5) * 30))
        for b in [int(x) for x in args.batches.split(",")]:
            fwd = forward_ms_per_frame(args, model, precision, b)
            cost = one["preprocess_p50"] + fwd + one["decode_p50"]
            bound = ncores * 1000.0 / (30.0 * cost)
            sat_ms = (saturated_ms_per_frame(args, model, b, args.saturated_n)
                      if args.saturated_n else 0.0)
            n, probes = search(args, model, b)
            at = probes.get(n)
            nxt = probes.get(n + 1)
            results.append({"model": name, "precision": precision, "batch": b, "density": n,
                            "preprocess_ms": one["preprocess_p50"], "forward_ms": fwd,
                            "decode_ms": one["decode_p50"], "bound": bound,
                            "saturated_ms": sat_ms,
                            "saturated_bound": ncores * 1000.0 / (30.0 * sat_ms) if sat_ms else 0.0,
                            "at": at, "next": nxt, "probes": list(probes.values())})
    best = {}
    for r in results:
        k = (r["model"], r["precision"])
        best[k] = max(best.get(k, 0.0), r["bound"])
    for r in results:
        r["best_bound"] = best[(r["model"], r["precision"])]
    json.dump({"machine": machine(), "ncores": ncores, "args": vars(args), "results": results,
               "load_end": os.getloadavg()[0]}, open(args.json, "w"), indent=1)
    print(table(results, ncores))
    if args.plots:
        plot(results, args.plots)


def replot(paths, folder):
    results = []
    for path in paths:
        run = json.load(open(path))
        tag = run["args"].get("extra", "")
        for r in run["results"]:
            if tag:
                r["precision"] = f"{r['precision']} {tag}"
            results.append(r)
    plot(results, folder or os.path.join(ROOT, "docs/images"))


def plot(results, folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6))
    models = []
    for r in results:
        if (r["model"], r["precision"]) not in models:
            models.append((r["model"], r["precision"]))
    for i, m in enumerate(models):
        rs = [r for r in results if (r["model"], r["precision"]) == m]
        xs = [r["batch"] for r in rs]
        line, = a.plot(xs, [r["density"] for r in rs], "o-", label=f"{m[0]} {m[1]}: measured")
        a.plot(xs, [r["bound"] for r in rs], "--", color=line.get_color(),
               label=f"{m[0]} {m[1]}: compute bound")
        top = max(rs, key=lambda r: r["density"])
        b.bar(i, top["density"] / top["best_bound"], color=line.get_color())
        b.text(i, top["density"] / top["best_bound"] + 0.02,
               f"{top['density']} / {top['best_bound']:.1f}\n(batch {top['batch']})",
               ha="center")
    a.set_xscale("log", base=2)
    a.set_xticks(sorted({r["batch"] for r in results}))
    a.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    a.set_xlabel("batch-size")
    a.set_ylabel("cameras (1080p YUY2, 30 fps)")
    a.set_title("Density vs batch size")
    a.legend(fontsize=8)
    b.axhline(0.85, color="gray", ls=":", label="goal 0.85")
    b.set_xticks(range(len(models)))
    b.set_xticklabels([f"{m[0]} {m[1]}" for m in models], fontsize=8, rotation=12)
    b.set_ylim(0, 1.2)
    b.set_ylabel("density / compute bound (best batch)")
    b.set_title("Density vs model")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "density.png"), dpi=90)


def machine():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def table(results, ncores):
    out = [f"machine: {machine()}, {ncores} cores; load average at the end "
           f"{os.getloadavg()[0]:.1f}",
           "| model | batch | density (cameras) | inferred at N | worst p99 at N (ms) | "
           "N+1: inferred, p99 | cores used at N, N+1 | preprocess + forward/frame + decode (core-ms) | "
           "bound at this batch | bound (best batch) | density / bound | "
           "saturated: all-in core-ms/frame, bound, density / bound |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        at, nx = r["at"], r["next"]
        at_s = (f"{100 * at['inferred_frac']:.1f} % | {at['p99_ms']:.1f}" if at else "– | –")
        nx_s = (f"{100 * nx['inferred_frac']:.1f} %, {nx['p99_ms']:.0f} ms" if nx else "–")
        used = ", ".join(f"{x['cores_used']:.2f}" if x else "–" for x in (at, nx))
        out.append(
            f"| {r['model']} {r['precision']} | {r['batch']} | {r['density']} | {at_s} | {nx_s} | "
            f"{used} | "
            f"{r['preprocess_ms']:.2f} + {r['forward_ms']:.2f} + {r['decode_ms']:.3f} | "
            f"{r['bound']:.1f} | {r['best_bound']:.1f} | {r['density'] / r['best_bound']:.2f} | "
            + (f"{r['saturated_ms']:.2f}, {r['saturated_bound']:.1f}, "
               f"{r['density'] / r['saturated_bound']:.2f} |" if r.get("saturated_ms") else "– |"))
    return "\n".join(out)


if __name__ == "__main__":
    main()
