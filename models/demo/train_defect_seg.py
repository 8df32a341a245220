#!/usr/bin/python3
"""Train the demo defect segmentation model (DefectSeg) on synthetic frames, CPU.

Writes defect_seg.pt (traced TorchScript at 640x480, YOLOv8-seg outputs:
dets [N, 4+4+32, 6000] and protos [N, 32, 120, 160]), defect_seg.json and
defect_seg.labels beside this script (or into --out-dir).

Data (seg_data.py): frames from the demo renderer (seeds 8,000,000+, never
the clip's), half through JPEG; the network is fully convolutional before
its decode, so it trains on --crop crops (default 256x192, mostly around a
part) and is exported for the whole 640x480 frame, pixel/255, RGB.

Training: per defect one pyramid level by size (longest box side < 64 px
-> stride 8, else 16); positives are the cells whose centre is inside the
box and within 2.5 strides of its centre (plus the centre cell); a cell
claimed by two goes to the smaller. Losses: class BCE over all cells (cells
of "ignore" defects left out) / positives, GIoU on positives, and per
positive the mask BCE of sigmoid(coefficients . protos), upsampled x2 (to
stride 2: half the cost of full resolution, and still finer than a
scratch's width) against the truth mask area-averaged to stride 2, inside
the truth box (mean over the box), as YOLOv8-seg does. Random horizontal/vertical flips. AdamW with one-cycle
LR; fixed seeds, 2 threads. --marks S gives that share of the parts a random
DataMatrix marking (part_codes.random_mark; no mask: not a defect); the
shipped model was fine-tuned that way (--init, models/README.md).
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
import seg_data as sd  # noqa: E402
from defect_seg_net import DefectSeg  # noqa: E402

STRIDES = (8, 16)
LEVEL_SPLIT = 64
CENTER_RADIUS = 2.5
NAME = "defect_seg"
IN_W, IN_H = 640, 480


def _crops_of(args):
    seed, n, w, h = args
    return sd.crops(seed, n, w, h)


def render_set(first_seed, frames, per_frame, w, h, workers):
    with multiprocessing.Pool(workers) as pool:
        out = pool.map(_crops_of, [(first_seed + i, per_frame, w, h) for i in range(frames)],
                       chunksize=8)
    flat = [c for frame in out for c in frame]
    x = torch.from_numpy(np.stack([c[0] for c in flat])).permute(0, 3, 1, 2).contiguous()
    maps = torch.from_numpy(np.stack([c[1] for c in flat]))
    return x, maps, [c[2] for c in flat]


def assign(instances, w, h):
    """Per level: class target [C, cells], ignore mask [cells], and the
    positives [(cell, instance index)]."""
    out = []
    for k, s in enumerate(STRIDES):
        gw, gh = w // s, h // s
        gy, gx = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
        cx, cy = (gx.flatten() + 0.5) * s, (gy.flatten() + 0.5) * s
        owner = torch.full((gw * gh,), -1, dtype=torch.long)
        area = torch.full((gw * gh,), float("inf"))
        ignore = torch.zeros(gw * gh, dtype=torch.bool)
        for i, (cls, (x0, y0, x1, y1), ign) in enumerate(instances):
            inside = (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)
            if ign:
                ignore |= inside
                continue
            if (max(x1 - x0, y1 - y0) >= LEVEL_SPLIT) != (k == 1):
                continue
            bx, by = (x0 + x1) / 2, (y0 + y1) / 2
            near = ((cx - bx).abs() <= CENTER_RADIUS * s) & ((cy - by).abs() <= CENTER_RADIUS * s)
            pos = inside & near
            centre = min(int(by // s), gh - 1) * gw + min(int(bx // s), gw - 1)
            pos[centre] = True
            a = (x1 - x0) * (y1 - y0)
            take = pos & (a < area)
            owner[take], area[take] = i, a
        out.append((owner, ignore & (owner < 0)))
    return out


def flip(x, maps, instances, w, h, rng):
    """Random horizontal/vertical flips of a batch, per sample."""
    out = []
    for i in range(x.shape[0]):
        inst = instances[i]
        if rng.random() < 0.5:
            x[i], maps[i] = x[i].flip(2), maps[i].flip(1)
            inst = [(c, (w - b[2], b[1], w - b[0], b[3]), g) for c, b, g in inst]
        if rng.random() < 0.5:
            x[i], maps[i] = x[i].flip(1), maps[i].flip(0)
            inst = [(c, (b[0], h - b[3], b[2], h - b[1]), g) for c, b, g in inst]
        out.append(inst)
    return out


def batch_loss(model, x, maps, instances, targets):
    """(class, GIoU, mask) losses of a batch, each over its positives."""
    n, _, h, w = x.shape
    h3, h4, protos = model.heads(x)
    most = max(1, max(len(i) for i in instances))
    cls_tab = torch.zeros(n, most, dtype=torch.long)
    box_tab = torch.zeros(n, most, 4)
    for b, inst in enumerate(instances):
        for i, (c, box, _) in enumerate(inst):
            cls_tab[b, i], box_tab[b, i] = c, torch.tensor(box, dtype=torch.float32)
    # each instance's truth mask area-averaged to stride 2: [n, most, h/2, w/2]
    soft = F.avg_pool2d(F.one_hot(maps.long(), most + 1)[..., 1:].permute(0, 3, 1, 2).float(), 2)
    cls_loss, box_loss, mask_loss, npos = 0.0, 0.0, 0.0, 0
    for k, (box, cls, coef) in enumerate((h3, h4)):
        owner = torch.stack([t[k][0] for t in targets])    # [n, cells]
        ignore = torch.stack([t[k][1] for t in targets])
        logits = cls.flatten(2)                              # [n, C, cells]
        bi, ci = (owner >= 0).nonzero(as_tuple=True)
        oi = owner[bi, ci]
        target = torch.zeros_like(logits)
        target[bi, cls_tab[bi, oi], ci] = 1.0
        weight = (~ignore).float()[:, None, :].expand_as(logits)
        cls_loss = cls_loss + F.binary_cross_entropy_with_logits(logits, target, weight,
                                                                 reduction="sum")
        if bi.numel() == 0:
            continue
        npos += bi.numel()
        s = float(STRIDES[k])
        raw = box.flatten(2)[bi, :, ci]                      # [P, 4]
        xy = (raw[:, :2] + sd_grid(w, h, STRIDES[k])[:, ci].t()) * s
        wh = torch.exp(raw[:, 2:].clamp(max=6.0)) * s
        truth = box_tab[bi, oi]
        box_loss = box_loss + torchvision.ops.generalized_box_iou_loss(
            torch.cat([xy - wh / 2, xy + wh / 2], 1), truth, reduction="sum")
        mask_loss = mask_loss + masks_bce(coef.flatten(2)[bi, :, ci], protos, bi,
                                          soft[bi, oi], truth)
    npos = max(npos, 1)
    return cls_loss / npos, box_loss / npos, mask_loss / npos


def masks_bce(coef, protos, bi, target, boxes):
    """Sum over positives of the mean mask BCE inside each truth box, at
    stride 2 (the prototypes x2 against the truth area-averaged by 2)."""
    n, k, ph, pw = protos.shape
    flat = protos.reshape(n, k, ph * pw)
    logits = torch.cat([coef[bi == b] @ flat[b] for b in range(n)]).view(-1, 1, ph, pw)
    order = torch.cat([(bi == b).nonzero().flatten() for b in range(n)])
    logits = F.interpolate(logits, scale_factor=2.0, mode="bilinear", align_corners=False)[:, 0]
    target, boxes = target[order], boxes[order]
    h, w = target.shape[1:]
    ys = (torch.arange(h, dtype=torch.float32)[None, :, None] + 0.5) * 2
    xs = (torch.arange(w, dtype=torch.float32)[None, None, :] + 0.5) * 2
    inbox = ((xs >= boxes[:, 0, None, None]) & (xs <= boxes[:, 2, None, None]) &
             (ys >= boxes[:, 1, None, None]) & (ys <= boxes[:, 3, None, None])).float()
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none") * inbox
    return (bce.sum((1, 2)) / inbox.sum((1, 2)).clamp(min=1)).sum()


_GRIDS = {}


def sd_grid(w, h, s):
    if (w, h, s) not in _GRIDS:
        gy, gx = torch.meshgrid(torch.arange(h // s), torch.arange(w // s), indexing="ij")
        _GRIDS[(w, h, s)] = torch.stack([gx.flatten(), gy.flatten()]).float() + 0.5
    return _GRIDS[(w, h, s)]


def train(model, x, maps, instances, args):
    n, _, h, w = x.shape
    targets = [assign(inst, w, h) for inst in instances]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    steps = args.epochs * (n // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=steps, pct_start=0.15)
    rng = np.random.default_rng(1)
    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        order = torch.from_numpy(rng.permutation(n))
        sums = np.zeros(3)
        for i in range(n // args.batch):
            idx = order[i * args.batch:(i + 1) * args.batch]
            xb, mb = x[idx].clone(), maps[idx].clone()
            ib = flip(xb, mb, [instances[j] for j in idx.tolist()], w, h, rng)
            tb = [assign(inst, w, h) for inst in ib]
            xb = (xb.float() / 255).contiguous(memory_format=torch.channels_last)
            parts = batch_loss(model, xb, mb, ib, tb)
            loss = parts[0] + 2.0 * parts[1] + 2.0 * parts[2]
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            sums += [float(p) for p in parts]
        sums /= n // args.batch
        print(f"epoch {epoch + 1}/{args.epochs}: cls {sums[0]:.3f} giou {sums[1]:.3f} "
              f"mask {sums[2]:.3f}  ({time.time() - t0:.0f} s)", flush=True)
    del targets


def export(model, out_dir):
    model.eval()
    x = torch.rand(1, 3, IN_H, IN_W).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        traced = torch.jit.trace(model, x)
    path = os.path.join(out_dir, NAME + ".pt")
    traced.save(path)
    loaded = torch.jit.load(path).eval()
    x2 = torch.rand(2, 3, IN_H, IN_W).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        eager, script = model(x2), loaded(x2)
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(path).eval()))
        opt = frozen(x2)
    for a, b, c in zip(eager, script, opt):
        if a.shape != b.shape or (a - b).abs().max() > 1e-4 or (a - c).abs().max() > 1e-3:
            raise RuntimeError(f"exported model differs: {a.shape} {b.shape} {c.shape}")
    print(f"dets {tuple(script[0].shape)} protos {tuple(script[1].shape)}; reloaded, batch 2 "
          f"channels_last and frozen+optimized match the eager model")
    with open(os.path.join(out_dir, NAME + ".labels"), "w") as f:
        f.write("\n".join(sd.CLASSES) + "\n")
    meta = {"name": "QA-line defect segmentation (demo)",
            "description": "YOLOv8-seg layout: dets [N,40,6000] (cx,cy,w,h input px, 4 sigmoid "
                           "class scores, 32 mask coefficients), protos [N,32,120,160]; whole "
                           "640x480 frame, pixel/255; models/README.md",
            "input_width": IN_W, "input_height": IN_H, "channel_order": "rgb",
            "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "resize": "stretch",
            "task": "detection", "decoder": "yolov8-seg", "labels": NAME + ".labels",
            # NMS IoU 0.3, not 0.45: the head often gives one defect twice,
            # from neighbouring cells, boxes ~10 px apart at box IoU 0.25-0.45
            # (models/README.md, "Where the false detections lie").
            "confidence_threshold": 0.25, "iou_threshold": 0.3}
    with open(os.path.join(out_dir, NAME + ".json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB) and its sidecar")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--frames", type=int, default=1200, help="training frames rendered")
    ap.add_argument("--crops", type=int, default=2, help="crops per frame")
    ap.add_argument("--crop", default="256x192")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--first-seed", type=int, default=sd.TRAIN_SEED)
    ap.add_argument("--init", help="start from this exported model's weights (a second stage)")
    ap.add_argument("--marks", type=float, default=0.0,
                    help="share of parts with a DataMatrix marking (not a defect: no mask)")
    args = ap.parse_args()
    sd.MARKS = args.marks  # before the render processes fork
    cw, ch = (int(v) for v in args.crop.split("x"))
    if cw % 16 or ch % 16:
        ap.error("--crop sides must be multiples of 16")
    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.time()
    x, maps, instances = render_set(args.first_seed, args.frames, args.crops, cw, ch, 2)
    ninst = sum(len(i) for i in instances)
    print(f"rendered {x.shape[0]} crops {cw}x{ch} from {args.frames} frames, {ninst} defects "
          f"({time.time() - t0:.0f} s)", flush=True)
    model = DefectSeg(len(sd.CLASSES), IN_W, IN_H).to(memory_format=torch.channels_last)
    print(f"DefectSeg: {sum(p.numel() for p in model.parameters()):,} parameters")
    if args.init:
        model.load_state_dict(torch.jit.load(args.init).state_dict())
        print(f"weights from {args.init}")
    t1 = time.time()
    train(model, x, maps, instances, args)
    print(f"trained in {time.time() - t1:.0f} s ({time.time() - t0:.0f} s with rendering)")
    export(model, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
