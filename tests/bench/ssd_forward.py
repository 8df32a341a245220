#!/usr/bin/python3
"""Forward time of the SSD-MobileNet-v1-shaped model (tests/bench/ssd_mobilenet_v1.py)
in fp32, bf16 and int8, prepared as torchinfer's engine prepares each
(src/engine/model_load.cpp, precision.cpp), alternated in one run: what
bounds the forward of issue 37's density figure (docs/performance.md).

  fp32: frozen + optimize_for_inference, channels_last input
  bf16: weights to bfloat16, frozen only, input cast inside the timed call
  int8: quantized engine onednn, frozen only

  /usr/bin/python3 tests/bench/ssd_forward.py --models build/bench-models \\
      [--batches 1] [--threads 1] [--reps 5] [--iters 20]
  /usr/bin/python3 tests/bench/ssd_forward.py --models build/bench-models --profile int8

Per precision and batch: the median over reps of (wall ms, CPU ms) per
forward, each rep `iters` forwards; the precisions take turns within a rep.
--profile P: torch.profiler's op table of precision P at the first batch
(with ONEDNN_VERBOSE=1 in the environment oneDNN also names its kernels).
Not a test: figures vary with load.
"""
import argparse
import os
import statistics
import sys
import time

import torch


def load(path, precision):
    m = torch.jit.load(path).eval()
    if precision == "bf16":
        m = m.to(torch.bfloat16)
    m = torch.jit.freeze(m)
    if precision == "fp32":
        m = torch.jit.optimize_for_inference(m)
    return m


def runner(m, precision, batch):
    x = torch.rand(batch, 3, 300, 300).contiguous(memory_format=torch.channels_last) * 2 - 1

    def run():
        m(x.to(torch.bfloat16) if precision == "bf16" else x)
    return run


def timed(run, iters):
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(iters):
        run()
    return (time.perf_counter() - w0) * 1e3 / iters, (time.process_time() - c0) * 1e3 / iters


def profile(run, precision, batch):
    from torch.profiler import ProfilerActivity, profile as prof
    for _ in range(3):
        run()
    with prof(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(10):
            run()
    print(f"# torch.profiler, {precision} batch {batch}, 10 forwards")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", required=True, help="dir with ssd_mobilenet_v1{,_int8}.pt")
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--profile", default="")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = "onednn"
    files = {"fp32": "ssd_mobilenet_v1.pt", "bf16": "ssd_mobilenet_v1.pt",
             "int8": "ssd_mobilenet_v1_int8.pt"}
    precisions = args.profile.split(",") if args.profile else args.precisions.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    models = {p: load(os.path.join(args.models, files[p]), p) for p in precisions}
    with torch.inference_mode():
        if args.profile:
            profile(runner(models[precisions[0]], precisions[0], batches[0]),
                    precisions[0], batches[0])
            return
        runs = {(p, b): runner(models[p], p, b) for p in precisions for b in batches}
        for run in runs.values():  # warm-up: oneDNN primitives and JIT profiling
            timed(run, 3)
        got = {k: [] for k in runs}
        for _ in range(args.reps):
            for k, run in runs.items():
                got[k].append(timed(run, args.iters))
    print(f"# {open('/proc/loadavg').read().split()[0]} load, threads {args.threads}, "
          f"reps {args.reps} x {args.iters}, torch {torch.__version__}")
    for (p, b), v in got.items():
        wall = statistics.median(w for w, _ in v) / b
        cpu = statistics.median(c for _, c in v) / b
        print(f"{p} batch {b}: {wall:.2f} ms wall, {cpu:.2f} core-ms CPU per frame "
              f"(wall per rep {min(w for w, _ in v) / b:.2f}..{max(w for w, _ in v) / b:.2f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
