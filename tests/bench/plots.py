#!/usr/bin/python3
"""Plots of docs/performance.md from compare.py's CSVs (medians over reps).

  plots.py RUNS.csv SCALING.csv OUT_DIR

Writes compare-throughput.png, compare-latency.png, compare-stages.png and
compare-scaling.png (the last only when SCALING.csv has rows).
"""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"a1": "torchinfer b1", "aB": "torchinfer bB", "b": "naive Python", "c": "naive C++",
          "d1": "bare libtorch b1", "dB": "bare libtorch bB"}
COLORS = {"a1": "#1f77b4", "aB": "#17becf", "b": "#d62728", "c": "#ff7f0e", "d1": "#2ca02c",
          "dB": "#98df8a"}


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def med(rows, key):
    """Median of a column; NaN where no row has it (e.g. decode without torchnms)."""
    vals = [float(r[key]) for r in rows if r.get(key) not in (None, "", "nan")]
    return statistics.median(vals) if vals else float("nan")


def groups(rows, mode):
    keys = []
    for r in rows:
        k = (r["model"], r["precision"], r["size"])
        if r["mode"] == mode and k not in keys:
            keys.append(k)
    return keys


def sel(rows, key, mode, ap):
    return [r for r in rows if (r["model"], r["precision"], r["size"]) == key
            and r["mode"] == mode and r["approach"] == ap]


def bars(ax, rows, mode, approaches, value, err=None):
    keys = groups(rows, mode)
    width = 0.8 / len(approaches)
    for i, ap in enumerate(approaches):
        xs, ys, es = [], [], []
        for j, k in enumerate(keys):
            rs = sel(rows, k, mode, ap)
            if rs:
                xs.append(j + i * width)
                ys.append(med(rs, value))
                es.append(med(rs, err) - ys[-1] if err else 0)
        if xs:
            batch = next((r["batch"] for r in rows if r["approach"] == ap), "")
            ax.bar(xs, ys, width, label=LABELS[ap].replace("bB", f"b{batch}"), color=COLORS[ap],
                   yerr=[[0] * len(es), es] if err else None, capsize=3)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
    ax.set_xticklabels([f"{m} {p}\n{s}" for m, p, s in keys], fontsize=8)


def main():
    runs, scaling, out = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    reps = len({r["rep"] for r in runs})

    n_groups = len(groups(runs, "fast"))
    fig, axes = plt.subplots(2, 1, figsize=(max(12, 1.3 * n_groups), 9))
    bars(axes[0], runs, "fast", ["a1", "aB", "b", "c", "d1", "dB"], "fps")
    axes[0].set_title("as fast as possible")
    bars(axes[1], runs, "live", ["a1", "aB", "b", "c"], "fps")
    axes[1].set_title("live source, 30 fps")
    for ax in axes:
        ax.set_ylabel("frames/s (median)")
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Throughput per configuration, median of {reps} interleaved reps")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare-throughput.png"), dpi=90)

    fig, ax = plt.subplots(figsize=(max(9, 1.0 * n_groups), 4.5))
    bars(ax, runs, "live", ["a1", "aB", "b", "c"], "p50_ms", "p99_ms")
    ax.set_yscale("log")
    ax.set_ylabel("end-to-end latency, ms (bar p50, whisker p99)")
    ax.set_title("Latency, live 30 fps source")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare-latency.png"), dpi=90)

    # Per-stage p50 from the elements' stats: queue wait, preprocess and
    # inference from torchinfer, decode from torchnms (detection models only).
    stages = ("queue", "preprocess", "inference", "decode")
    fig, axes = plt.subplots(2, 1, figsize=(max(12, 0.5 * n_groups * 2), 11))
    for ax, mode in zip(axes, ("fast", "live")):
        labels, stacks = [], []
        for k in groups(runs, mode):
            for ap in ("a1", "aB"):
                rs = sel(runs, k, mode, ap)
                if rs:
                    labels.append(f"{k[0]} {k[1]} {k[2].split('x')[1]}p b{rs[0]['batch']}")
                    stacks.append([med(rs, f"{s}_p50") for s in stages] + [med(rs, "total_p50")])
        bottom = [0.0] * len(stacks)
        for i, (name, color) in enumerate(zip(("queue wait", "preprocess", "inference",
                                               "decode + NMS (torchnms)"),
                                              ("#bbbbbb", "#ff7f0e", "#1f77b4", "#2ca02c"))):
            vals = [0.0 if s[i] != s[i] else s[i] for s in stacks]  # NaN: stage absent
            if i == 3 and not any(vals):
                continue
            ax.bar(range(len(stacks)), vals, 0.6, bottom=bottom, label=name, color=color)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.plot(range(len(stacks)), [s[4] for s in stacks], "k_", markersize=20,
                label="total in torchinfer")
        ax.set_xticks(range(len(stacks)))
        ax.set_xticklabels(labels, fontsize=7, rotation=90)
        ax.set_ylabel("ms per frame (p50 of each stage)")
        ax.set_title(f"torchinfer stages, {mode}")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare-stages.png"), dpi=90)

    if scaling:
        # One colour per model, solid = 2 threads, dashed = 1 (or more/less).
        fig, ax = plt.subplots(figsize=(10, 5))
        models = list(dict.fromkeys((r["model"], r["precision"]) for r in scaling))
        colors = plt.get_cmap("tab10")
        for key in dict.fromkeys((r["model"], r["precision"], r["threads"]) for r in scaling):
            rs = [r for r in scaling if (r["model"], r["precision"], r["threads"]) == key]
            ax.plot([int(r["batch"]) for r in rs], [float(r["fps"]) for r in rs], marker="o",
                    color=colors(models.index(key[:2]) % 10),
                    linestyle="-" if key[2] == max(r["threads"] for r in scaling) else "--",
                    label=f"{key[0]} {key[1]}, {key[2]} thread(s)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("images/s (engine, p50)")
        ax.set_title("Scaling with batch size and threads")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        fig.savefig(os.path.join(out, "compare-scaling.png"), dpi=90)

if __name__ == "__main__":
    main()
