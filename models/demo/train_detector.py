#!/usr/bin/python3
"""Train the demo QA-line detector (PartsDetector) on synthetic frames, CPU.

Writes parts_detector.pt (traced TorchScript, YOLOv5 layout [N, 1500, 11]),
parts_detector.json and parts_detector.labels beside this script (or into
--out-dir).

Frames are rendered at camera size (640x480) by make_detection_data.py (half
of them through JPEG, like the MJPEG demo clip) and area-resized to 320x240
exactly as the plugin does (whole frame, same aspect, so no letterbox).
Input normalisation is YOLOv5's: pixel/255 (mean 0, std 1), RGB.

Training: per object one pyramid level by size (longest side < 64 input px
-> stride 8, else stride 16); positives are the grid cells whose centre is
inside the box and within 2.5 strides of its centre (plus the centre cell);
a cell claimed by two objects goes to the smaller. Losses: objectness BCE
over all cells, class BCE and GIoU on positives, each divided by the number
of positives; objects marked "ignore" (mostly out of view) switch the
objectness loss off in their cells. Random horizontal/vertical flips.
AdamW with one-cycle LR; fixed seeds, 2 threads.

Marked parts: --marks S gives that share of the training parts a random
DataMatrix marking (part_codes.random_mark: any serial, turn, smudge; not
a defect, no box), so the detector learns a mark is not a scratch or spot.
The shipped model was fine-tuned that way from the bare-part one
(models/README.md: --init, --first-seed, --lr).

Exit status 1 if held-out mAP@0.5 (200 frames, eval seeds) is below --min-map.
That figure is on 8-bit-rounded inputs, as trained; eval_detector.py
resizes in float like the plugin and gives the figures to compare with it.
"""
import argparse
import json
import multiprocessing
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import detection_metrics as dm  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402
from parts_detector_net import PartsDetector  # noqa: E402

IN_W, IN_H = 320, 240
STRIDES = (8, 16)
LEVEL_SPLIT = 64  # longest box side (input px) from which an object goes to stride 16
CENTER_RADIUS = 2.5
NAME = "parts_detector"


def prepare(img, objects):
    """Frame and objects -> (uint8 HxWx3 at input size, [(x0,y0,x1,y1,cls,ignore)])
    in model-input pixels."""
    sx, sy = IN_W / mf.WIDTH, IN_H / mf.HEIGHT
    small = mf.downscale(img, IN_W, IN_H)
    boxes = [(o["bbox"][0] * sx, o["bbox"][1] * sy, o["bbox"][2] * sx, o["bbox"][3] * sy,
              o["class_id"], o["ignore"]) for o in objects]
    return small, boxes


MARKS = 0.0  # share of training parts carrying a DataMatrix (--marks; set before rendering)


def render_train(seed):
    return prepare(*md.render_sample(seed, jpeg=True, marks=MARKS))


def render_plain(seed):
    return prepare(*md.render_sample(seed, jpeg=False))


def render_set(fn, first_seed, count, workers):
    with multiprocessing.Pool(workers) as pool:
        samples = pool.map(fn, range(first_seed, first_seed + count), chunksize=16)
    x = torch.from_numpy(np.stack([s[0] for s in samples])).permute(0, 3, 1, 2).contiguous()
    return x, [s[1] for s in samples]


def normalise(x_uint8):
    return (x_uint8.float() / 255).contiguous(memory_format=torch.channels_last)


def _grid_centres():
    out = []
    for s in STRIDES:
        gy, gx = np.meshgrid(np.arange(IN_H // s), np.arange(IN_W // s), indexing="ij")
        out.append(((gx.ravel() + 0.5) * s, (gy.ravel() + 0.5) * s))
    return out


GRIDS = _grid_centres()
A = sum(len(g[0]) for g in GRIDS)


def assign(boxes, classes):
    """Targets for one frame: (positive object index per anchor or -1,
    objectness weight per anchor)."""
    owner = np.full(A, -1, np.int64)
    owner_area = np.full(A, np.inf)
    weight = np.ones(A, np.float32)
    base = 0
    for level, (cx, cy) in enumerate(GRIDS):
        s = STRIDES[level]
        for i, (x0, y0, x1, y1, c, ignore) in enumerate(boxes):
            if (max(x1 - x0, y1 - y0) >= LEVEL_SPLIT) != (level == 1):
                continue
            gx, gy = (x0 + x1) / 2, (y0 + y1) / 2
            inside = (cx > x0) & (cx < x1) & (cy > y0) & (cy < y1)
            near = (np.abs(cx - gx) < CENTER_RADIUS * s) & (np.abs(cy - gy) < CENTER_RADIUS * s)
            m = inside & near
            ci = int(min(gy // s, IN_H // s - 1)) * (IN_W // s) + int(min(gx // s, IN_W // s - 1))
            m[ci] = True
            idx = np.nonzero(m)[0] + base
            if ignore:
                weight[idx] = 0.0
                continue
            area = (x1 - x0) * (y1 - y0)
            take = idx[area < owner_area[idx]]
            owner[take], owner_area[take] = i, area
        base += len(cx)
    weight[owner >= 0] = 1.0
    return owner, weight


def flip_boxes(boxes, h_flip, v_flip):
    out = []
    for x0, y0, x1, y1, c, ig in boxes:
        if h_flip:
            x0, x1 = IN_W - x1, IN_W - x0
        if v_flip:
            y0, y1 = IN_H - y1, IN_H - y0
        out.append((x0, y0, x1, y1, c, ig))
    return out


def train(model, x, targets, epochs, batch, classes, lr=3e-3):
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    steps = epochs * (len(x) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.15)
    step = 0
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=gen)
        sums = np.zeros(3)
        n = 0
        t0 = time.time()
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i:i + batch].tolist()
            flips = torch.rand(len(idx), 2, generator=gen) < 0.5
            xb = x[idx]
            bx = []
            for k, j in enumerate(idx):
                hf, vf = bool(flips[k, 0]), bool(flips[k, 1])
                img = xb[k]
                if hf:
                    img = img.flip(2)
                if vf:
                    img = img.flip(1)
                xb[k] = img
                bx.append(flip_boxes(targets[j], hf, vf))
            l_obj, l_cls, l_box = losses(model, normalise(xb), bx, classes)
            loss = l_obj + l_cls + 5.0 * l_box
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            sums += [l_obj.item(), l_cls.item(), l_box.item()]
            n += 1
        print(f"epoch {epoch + 1:2d}/{epochs}  obj {sums[0] / n:.3f}  cls {sums[1] / n:.3f}  "
              f"giou {sums[2] / n:.3f}  ({time.time() - t0:.0f}s)", flush=True)


def losses(model, xn, batch_boxes, classes):
    b3, o3, c3, b4, o4, c4 = model.heads(xn)
    N = xn.shape[0]
    box_raw = torch.cat([b3.flatten(2), b4.flatten(2)], 2).permute(0, 2, 1)   # N, A, 4
    obj = torch.cat([o3.flatten(2), o4.flatten(2)], 2).permute(0, 2, 1)[..., 0]  # N, A
    cls = torch.cat([c3.flatten(2), c4.flatten(2)], 2).permute(0, 2, 1)       # N, A, C
    owners, weights = zip(*(assign(bb, classes) for bb in batch_boxes))
    owner = torch.from_numpy(np.stack(owners))
    weight = torch.from_numpy(np.stack(weights))
    pos = owner >= 0
    npos = max(int(pos.sum()), 1)
    obj_t = pos.float()
    l_obj = (F.binary_cross_entropy_with_logits(obj, obj_t, reduction="none") * weight).sum() / npos
    if not pos.any():
        zero = box_raw.sum() * 0
        return l_obj, zero + cls.sum() * 0, zero
    n_idx, a_idx = pos.nonzero(as_tuple=True)
    gt = torch.tensor([batch_boxes[n][owner[n, a]][:5] for n, a in
                       zip(n_idx.tolist(), a_idx.tolist())], dtype=torch.float32)
    cls_t = F.one_hot(gt[:, 4].long(), classes).float()
    l_cls = F.binary_cross_entropy_with_logits(cls[n_idx, a_idx], cls_t, reduction="sum") / npos
    strides = torch.tensor([STRIDES[0]] * len(GRIDS[0][0]) + [STRIDES[1]] * len(GRIDS[1][0]),
                           dtype=torch.float32)
    centres = torch.tensor(np.concatenate([np.stack(g, 1) for g in GRIDS]), dtype=torch.float32)
    s = strides[a_idx][:, None]
    r = box_raw[n_idx, a_idx]
    xy = centres[a_idx] + r[:, :2] * s
    wh = torch.exp(r[:, 2:].clamp(max=6.0)) * s
    pb = torch.cat([xy - wh / 2, xy + wh / 2], 1)
    l_box = torchvision.ops.generalized_box_iou_loss(pb, gt[:, :4], reduction="sum") / npos
    return l_obj, l_cls, l_box


def evaluate(model, x, truths, classes):
    model.eval()
    m, aps, npos, _ = dm.model_map(model, normalise(x), truths, len(classes))
    return m, aps, npos


def save(model, out_dir, classes, conf, iou):
    model.eval()
    example = normalise(torch.zeros(1, 3, IN_H, IN_W, dtype=torch.uint8))
    with torch.no_grad():
        ts = torch.jit.trace(model, example)
    path = os.path.join(out_dir, NAME + ".pt")
    ts.save(path)
    probe = normalise(torch.randint(0, 256, (3, 3, IN_H, IN_W), dtype=torch.uint8))
    with torch.no_grad():
        diff = (torch.jit.load(path)(probe) - model(probe)).abs().max().item()
    if diff > 1e-3:
        raise RuntimeError(f"reloaded model differs from eager ({diff})")
    with open(os.path.join(out_dir, NAME + ".labels"), "w") as f:
        f.write("\n".join(classes) + "\n")
    sidecar = {"name": "QA-line parts and defects detector (demo)",
               "description": "YOLOv5 layout [N,1500,11]: cx,cy,w,h (input px), objectness, "
                              "6 class scores, all sigmoid; 320x240 area-resized from 640x480",
               "input_width": IN_W, "input_height": IN_H, "channel_order": "rgb",
               "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0],
               "task": "detection", "decoder": "yolov5", "labels": NAME + ".labels",
               "confidence_threshold": conf, "iou_threshold": iou}
    with open(os.path.join(out_dir, NAME + ".json"), "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB), {NAME}.json, {NAME}.labels")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--train", type=int, default=2560, help="training frames")
    ap.add_argument("--heldout", type=int, default=200, help="held-out frames")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--min-map", type=float, default=0.5)
    ap.add_argument("--marks", type=float, default=0.0,
                    help="share of training parts with a DataMatrix marking (not a defect)")
    ap.add_argument("--first-seed", type=int, default=md.TRAIN_SEED, help="first training seed")
    ap.add_argument("--init", help="start from these weights (a saved parts_detector.pt): fine-tune")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    args = ap.parse_args()
    global MARKS
    MARKS = args.marks

    torch.set_num_threads(2)
    torch.manual_seed(0)
    classes = md.CLASSES
    t0 = time.time()
    x_tr, y_tr = render_set(render_train, args.first_seed, args.train, args.workers)
    x_ho, y_ho = render_set(render_plain, md.HELDOUT_SEED, args.heldout, args.workers)
    t1 = time.time()
    nobj = sum(len(y) for y in y_tr)
    print(f"rendered {len(x_tr)} train ({nobj} objects) + {len(x_ho)} held-out frames "
          f"in {t1 - t0:.0f}s", flush=True)

    model = PartsDetector(len(classes), IN_W, IN_H).to(memory_format=torch.channels_last)
    if args.init:
        model.load_state_dict(torch.jit.load(args.init).state_dict())
        print(f"fine-tuning from {args.init}")
    print(f"PartsDetector: {sum(p.numel() for p in model.parameters())} parameters")
    train(model, x_tr, y_tr, args.epochs, args.batch, len(classes), args.lr)
    t2 = time.time()
    m, aps, npos = evaluate(model, x_ho, y_ho, classes)
    print(f"trained in {t2 - t1:.0f}s; total {t2 - t0:.0f}s")
    print(f"held-out mAP@0.5 {m:.4f} (conf >= 0.001, NMS IoU 0.45)")
    for c, a, n in zip(classes, aps, npos):
        print(f"  {c:13s} AP {a if a is None else round(a, 4)}  ({n} boxes)")
    save(model, args.out_dir, classes, 0.25, 0.45)
    if m < args.min_map:
        print(f"error: held-out mAP {m:.4f} < {args.min_map}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
