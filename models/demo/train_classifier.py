#!/usr/bin/python3
"""Train the demo conveyor-part classifier on synthetic frames (CPU, ~4 min).

Writes parts_classifier.pt (traced TorchScript), parts_classifier.json and
parts_classifier.labels beside this script (or into --out-dir).

Frames are rendered at camera size (640x480) by make_frames.py and area-
downscaled to 96x96 exactly as the plugin does (whole frame, no crop), so
the model sees what it will see at run time. Held-out frames use a disjoint
seed range. Exit status 1 if held-out accuracy is below --min-accuracy.
"""
import argparse
import io
import json
import multiprocessing
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_frames  # noqa: E402
import train_loop  # noqa: E402

SIZE = 96
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
TRAIN_SEEDS = 1_000_000
HELDOUT_SEEDS = 2_000_000


def render_sample(seed):
    """(96x96 uint8 RGB, class index, case) for `seed`; classes round-robin.
    case: the defect type, "cut" for a part cut by the frame edge, or None."""
    label = seed % len(make_frames.CLASSES)
    img, ann = make_frames.render(make_frames.random_scene(seed, make_frames.CLASSES[label]))
    rng = np.random.default_rng(seed + 99)
    if rng.random() < 0.5:  # the demo clip is MJPEG, so learn to ignore its artefacts
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=int(rng.integers(60, 95)))
        img = np.asarray(Image.open(buf).convert("RGB"))
    case = ("cut" if label == 0 else ann[0]["defect"]) if ann else None
    return make_frames.downscale(img, SIZE, SIZE), label, case


def render_set(first_seed, count, workers):
    seeds = range(first_seed, first_seed + count)
    with multiprocessing.Pool(workers) as pool:
        samples = pool.map(render_sample, seeds, chunksize=32)
    x = torch.from_numpy(np.stack([s[0] for s in samples])).permute(0, 3, 1, 2)
    return x.contiguous(), torch.tensor([s[1] for s in samples]), [s[2] for s in samples]


def normalise(x_uint8):
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    x = (x_uint8.float() / 255 - mean) / std
    return x.contiguous(memory_format=torch.channels_last)  # the plugin feeds channels_last


def block(cin, cout, stride=1):
    return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class PartsNet(nn.Module):
    """~100k parameters: 96x96 -> 6x6 feature map -> global pool -> logits."""

    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            *block(3, 16, 2),                      # 48x48
            *block(16, 24), nn.MaxPool2d(2),       # 24x24
            *block(24, 48), nn.MaxPool2d(2),       # 12x12
            *block(48, 64), nn.MaxPool2d(2),       # 6x6
            *block(64, 96))
        self.head = nn.Linear(96, classes)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(normalise(x[i:i + 256])).argmax(1) for i in range(0, len(x), 256)])
    return (pred == y).float().mean().item(), pred


def confusion(y, pred, classes):
    m = torch.zeros(len(classes), len(classes), dtype=torch.long)
    for t, p in zip(y.tolist(), pred.tolist()):
        m[t, p] += 1
    w = max(len(c) for c in classes)
    lines = [" " * (w + 2) + " ".join(f"{c[:6]:>6}" for c in classes)]
    lines += [f"{c:>{w}}  " + " ".join(f"{v:6d}" for v in row.tolist())
              for c, row in zip(classes, m)]
    return "\n".join(lines)


def save(model, out_dir, classes):
    model.eval()
    example = normalise(torch.zeros(1, 3, SIZE, SIZE, dtype=torch.uint8))
    with torch.no_grad():
        ts = torch.jit.trace(model, example)
    path = os.path.join(out_dir, "parts_classifier.pt")
    ts.save(path)
    probe = normalise(torch.randint(0, 256, (3, 3, SIZE, SIZE), dtype=torch.uint8))
    with torch.no_grad():
        diff = (torch.jit.load(path)(probe) - model(probe)).abs().max().item()
    if diff > 1e-4:
        raise RuntimeError(f"reloaded model differs from eager ({diff})")
    with open(os.path.join(out_dir, "parts_classifier.labels"), "w") as f:
        f.write("\n".join(classes) + "\n")
    sidecar = {"input_width": SIZE, "input_height": SIZE, "channel_order": "rgb",
               "mean": MEAN, "std": STD, "task": "classification",
               "labels": "parts_classifier.labels", "top_k": 3, "output_activation": "softmax"}
    with open(os.path.join(out_dir, "parts_classifier.json"), "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB), "
          f"parts_classifier.json, parts_classifier.labels")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--train", type=int, default=4000, help="training frames")
    ap.add_argument("--heldout", type=int, default=1000, help="held-out frames")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--min-accuracy", type=float, default=0.95)
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.manual_seed(0)
    classes = make_frames.CLASSES
    t0 = time.time()
    x_tr, y_tr, _ = render_set(TRAIN_SEEDS, args.train, args.workers)
    x_ho, y_ho, cases = render_set(HELDOUT_SEEDS, args.heldout, args.workers)
    t1 = time.time()
    print(f"rendered {len(x_tr)} train + {len(x_ho)} held-out frames in {t1 - t0:.0f}s", flush=True)

    model = PartsNet(len(classes)).to(memory_format=torch.channels_last)
    print(f"PartsNet: {sum(p.numel() for p in model.parameters())} parameters")
    train_loop.train(model, x_tr, y_tr, args.epochs, args.batch, normalise)
    t2 = time.time()
    train_acc, _ = accuracy(model, x_tr, y_tr)
    held_acc, pred = accuracy(model, x_ho, y_ho)
    print(f"trained in {t2 - t1:.0f}s; total {t2 - t0:.0f}s")
    print(f"train accuracy {train_acc:.4f}   held-out accuracy {held_acc:.4f}")
    print("held-out confusion (rows = truth, columns = prediction):")
    print(confusion(y_ho, pred, classes))
    for c in sorted({c for c in cases if c}):
        hit = [int(p == t) for p, t, cc in zip(pred.tolist(), y_ho.tolist(), cases) if cc == c]
        what = "empty frames with a part cut by the edge" if c == "cut" else f"{c} defects"
        print(f"held-out accuracy on {what}: {sum(hit) / len(hit):.3f} ({len(hit)})")
    save(model, args.out_dir, classes)
    if held_acc < args.min_accuracy:
        print(f"error: held-out accuracy {held_acc:.4f} < {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
