#!/usr/bin/python3
"""Train the demo defect classifier on synthetic part crops (CPU).

About 20 min of CPU time: 50 min wall on the shared 2-core build machine,
roughly 10 min on 2 quiet cores.

Writes defect_classifier.pt (traced TorchScript), defect_classifier.json and
defect_classifier.labels beside this script (or into --out-dir), then checks
the saved file on the decoded line.mkv (eval_defect_classifier.py clip).

Crops are cut exactly as torchinfer's inference-region=roi-list cuts a
detected part (defect_crops.py: jittered box, object-padding 0.1, clipped,
INTER_AREA to 96x96, stretched), from frames rendered by make_frames.py
(70 % through JPEG). Training scenes: seeds 5,000,000+; held out: seeds
6,000,000+ (disjoint; eval_defect_classifier.py heldout reproduces them);
int8 calibration: 5,500,000+ (not trained on). --marks S gives that share
of the training parts a random DataMatrix marking (part_codes.random_mark;
not a defect: such a part keeps its label); the shipped model was
fine-tuned that way from the bare-part one (--init, --first-seed, --lr;
models/README.md). Exit status 1 if held-out
accuracy is below --min-accuracy or a judged part of the clip gets the
wrong verdict.
"""
import argparse
import json
import multiprocessing
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_crops as dc  # noqa: E402
import eval_defect_classifier as ev  # noqa: E402
from defect_classifier_net import DefectNet  # noqa: E402
import train_loop  # noqa: E402

TRAIN_SEED = 5_000_000
MARKS = 0.0  # share of training parts carrying a DataMatrix (--marks; set before rendering)


def _train_samples(seed):
    # Two differently jittered crops per part: cheap (one render) and it
    # teaches that the box is approximate.
    return [(np.round(c).astype(np.uint8), y) for c, y, _ in
            dc.scene_samples(seed, 2, marks=MARKS)]


def render_train(count, workers, first=TRAIN_SEED):
    with multiprocessing.Pool(workers) as pool:
        chunks = pool.map(_train_samples, range(first, first + count), chunksize=16)
    samples = [s for c in chunks for s in c]
    x = torch.from_numpy(np.stack([s[0] for s in samples])).permute(0, 3, 1, 2).contiguous()
    return x, torch.tensor([s[1] for s in samples])


def _heldout_chunk(seeds):
    return ev.heldout_set(seeds[0], len(seeds))


def render_heldout(count, workers):
    step = (count + workers - 1) // workers
    parts = [list(range(s, min(s + step, ev.HELDOUT_SEED + count)))
             for s in range(ev.HELDOUT_SEED, ev.HELDOUT_SEED + count, step)]
    with multiprocessing.Pool(workers) as pool:
        res = pool.map(_heldout_chunk, parts)
    return (np.concatenate([r[0] for r in res]), np.concatenate([r[1] for r in res]),
            [k for r in res for k in r[2]])


def confusion(y, pred):
    names = dc.LABELS
    m = np.zeros((len(names), len(names)), np.int64)
    for t, p in zip(y, pred):
        m[t, p] += 1
    lines = [" " * 14 + " ".join(f"{c[:7]:>7}" for c in names)]
    lines += [f"{c:>12}  " + " ".join(f"{v:7d}" for v in row) for c, row in zip(names, m)]
    return "\n".join(lines)


def save(model, out_dir):
    model.eval()
    example = dc.normalise(torch.zeros(1, 3, dc.SIZE, dc.SIZE))
    with torch.no_grad():
        ts = torch.jit.trace(model, example)
    path = os.path.join(out_dir, "defect_classifier.pt")
    ts.save(path)
    probe = dc.normalise(torch.randint(0, 256, (3, 3, dc.SIZE, dc.SIZE)))
    with torch.no_grad():
        diff = (torch.jit.load(path)(probe) - model(probe)).abs().max().item()
    if diff > 1e-4:
        raise RuntimeError(f"reloaded model differs from eager ({diff})")
    with open(os.path.join(out_dir, "defect_classifier.labels"), "w") as f:
        f.write("\n".join(dc.LABELS) + "\n")
    sidecar = {"name": "QA-line part defect classifier (demo)",
               "description": f"one padded part crop ({dc.PADDING} per side, area-resized, "
                              f"stretched) -> ok or the defect type; second stage after "
                              f"parts_detector",
               "input_width": dc.SIZE, "input_height": dc.SIZE, "channel_order": "rgb",
               "mean": dc.MEAN, "std": dc.STD, "task": "classification",
               "labels": "defect_classifier.labels", "top_k": 2,
               "output_activation": "softmax", "object_padding": dc.PADDING,
               "object_classes": dc.PART_CLASSES}
    with open(os.path.join(out_dir, "defect_classifier.json"), "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB), "
          f"defect_classifier.json, defect_classifier.labels")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--train", type=int, default=1300, help="training scenes (~2.4 parts each)")
    ap.add_argument("--heldout", type=int, default=300, help="held-out scenes")
    ap.add_argument("--epochs", type=int, default=14)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--min-accuracy", type=float, default=0.97)
    ap.add_argument("--marks", type=float, default=0.0,
                    help="share of training parts with a DataMatrix marking (not a defect)")
    ap.add_argument("--first-seed", type=int, default=TRAIN_SEED, help="first training seed")
    ap.add_argument("--init", help="start from these weights (a saved defect_classifier.pt)")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    args = ap.parse_args()
    global MARKS
    MARKS = args.marks

    torch.set_num_threads(2)
    torch.manual_seed(0)
    t0 = time.time()
    x_tr, y_tr = render_train(args.train, args.workers, args.first_seed)
    x_ho, y_ho, kinds = render_heldout(args.heldout, args.workers)
    t1 = time.time()
    counts = np.bincount(y_tr.numpy(), minlength=len(dc.LABELS)).tolist()
    print(f"rendered {len(x_tr)} train crops {dict(zip(dc.LABELS, counts))} and {len(x_ho)} "
          f"held-out crops in {t1 - t0:.0f}s", flush=True)

    model = DefectNet(len(dc.LABELS)).to(memory_format=torch.channels_last)
    if args.init:
        model.load_state_dict(torch.jit.load(args.init).state_dict())
        print(f"fine-tuning from {args.init}")
    print(f"DefectNet: {sum(p.numel() for p in model.parameters())} parameters")
    train_loop.train(model, x_tr, y_tr, args.epochs, args.batch, dc.normalise, args.lr)
    t2 = time.time()
    print(f"trained in {t2 - t1:.0f}s; total {t2 - t0:.0f}s")
    path = save(model, args.out_dir)
    acc = ev.report_heldout(path, x_ho, y_ho)
    pred = ev.probabilities(ev.load(path), x_ho).argmax(1).numpy()
    print("held-out confusion (rows = truth, columns = prediction):")
    print(confusion(y_ho, pred))
    for kind in sorted(set(kinds)):
        sel = np.array([k == kind for k in kinds])
        print(f"  held-out accuracy on {kind}: {float((pred[sel] == y_ho[sel]).mean()):.3f} "
              f"({int(sel.sum())})")
    right, judged = ev.clip_verdicts(path)
    status = 0
    if acc < args.min_accuracy:
        print(f"error: held-out accuracy {acc:.4f} < {args.min_accuracy}", file=sys.stderr)
        status = 1
    if right != judged:
        print(f"error: {judged - right} of {judged} clip parts get the wrong verdict",
              file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
