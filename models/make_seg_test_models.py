#!/usr/bin/python3
"""Test models for torchnms' decoder "yolov8-seg" (Ultralytics' YOLOv8-seg
layout: head [N, 4 + C + 32, A], prototypes [N, 32, h, w]), with the masks
models/seg_reference.py expects of them.

seg_fixed.pt   traced; input [N,3,64,64] rgb, mean 0 std 1; outputs that do
               not depend on the input: 8 anchors, classes scratch/spot,
               prototypes [N,32,16,16]: p0 +4 on rows 3..6 x cols 2..7 (-4
               elsewhere), p1 +4 on a disc of radius 3 around cell (10, 11)
               (-4 elsewhere), p2 +1 everywhere, the others 0. Anchors:
               0 scratch 0.9 box (20, 20, 24, 16) coefficients e0; 1 spot 0.8
               (44, 44, 20, 20) e1; 2 scratch 0.7 (52, 12, 12, 8) -10 e2 (an
               empty mask); 3 spot 0.6 (12, 52, 10, 10) +10 e2 (a full mask);
               4 scratch 0.5 on anchor 0's box (suppressed by NMS); 5..7 score
               0.1 (below 0.25). seg_fixed.expected.json: the reference's
               detections and masks for a 128x128 frame (stretched, scale
               0.5) and a 160x128 frame letterboxed (scale 0.4 x 51/128,
               6 rows of padding on top, as torchinfer letterboxes).
seg_random.pt  traced random-weight head (torch.manual_seed(0)): two convs to
               stride 8 ([N, 4 + 3 + 32, 64] anchors on an 8x8 grid) and a
               stride-4 prototype branch [N, 32, 16, 16]; input [N,3,64,64] rgb
               mean 0 std 1. seg_random.frame.rgb: the 64x64 RGB frame the
               test feeds it; seg_random.expected.json: the reference's
               detections on the model's output for it, with the sidecar's
               thresholds (confidence halfway across the first gap of at
               least 0.002 between anchor scores after the 10th best).
seg_many.pt    traced; input [N,3,640,640]; 8400 anchors of 100 classes
               (disjoint 4x4 boxes, 80 across, 105 down; anchor a of class
               a % 100 scoring 0.3 + 0.6 a / 8400), prototypes [N,32,160,160]
               with p0 = +1: 100 full masks of 16 pixels (anchors 8399..8300).
seg_nan.pt     seg_fixed with anchor 0's first coefficient NaN.
seg_flat_protos.pt  head as seg_fixed, prototypes [N, 32, 256] (rank 3).
seg_no_classes.pt   head [N, 36, 8] (4 box values and 32 coefficients, no
               class score) with seg_fixed's prototypes.
seg_part.pt    seg_fixed's prototypes with two anchors, labels bracket/scratch:
               a bracket 0.9 box (32, 32, 40, 40) and a scratch 0.8 box
               (30, 30, 8, 8), both +10 e2 (full masks): on a 128x128 frame
               the scratch's mask is 16 x 16 = 256 pixels (the QA line's
               defect-area test).
seg_checker.pt traced; input [N,3,640,640]; 100 anchors of 100 classes, each
               the whole input (320, 320, 640, 640), anchor a class a
               scoring 0.9 - a / 1000, coefficient e0 on a prototype 0 that
               alternates +1/-1 cell by cell (160x160): every mask has about
               a hundred thousand runs, so the frame's run budget is spent
               after some 40 masks.
Each .pt has a sidecar .json: task detection, decoder yolov8-seg.

Usage: make_seg_test_models.py OUTDIR
"""
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seg_reference  # noqa: E402

RAW_RGB = {"channel_order": "rgb", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0]}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def fixed_outputs():
    protos = torch.zeros(32, 16, 16)
    protos[0] = -4
    protos[0, 3:7, 2:8] = 4
    r = torch.arange(16.0).view(16, 1)
    c = torch.arange(16.0).view(1, 16)
    protos[1] = torch.where((r - 10) ** 2 + (c - 11) ** 2 <= 9, 4.0, -4.0)
    protos[2] = 1
    head = torch.zeros(4 + 2 + 32, 8)
    rows = [((20, 20, 24, 16), 0, 0.9, {0: 1.0}), ((44, 44, 20, 20), 1, 0.8, {1: 1.0}),
            ((52, 12, 12, 8), 0, 0.7, {2: -10.0}), ((12, 52, 10, 10), 1, 0.6, {2: 10.0}),
            ((20, 20, 24, 16), 0, 0.5, {1: 1.0})]
    for a in range(8):
        box, cls, score, coef = rows[a] if a < len(rows) else ((8 * a, 8, 4, 4), 0, 0.1, {})
        head[:4, a] = torch.tensor(box, dtype=torch.float32)
        head[4 + cls, a] = score
        for k, v in coef.items():
            head[6 + k, a] = v
    return head, protos


class Fixed(nn.Module):
    def __init__(self, head, protos):
        super().__init__()
        self.register_buffer("head", head)
        self.register_buffer("protos", protos)

    def forward(self, x):
        n = x.shape[0]
        zero = x.sum() * 0
        return (self.head.unsqueeze(0).expand(n, *self.head.shape) + zero,
                self.protos.unsqueeze(0).expand(n, *self.protos.shape) + zero)


class RandomHead(nn.Module):
    def __init__(self, classes=3, masks=32):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=4, padding=1)  # 16x16
        self.down = nn.Conv2d(16, 16, 3, stride=2, padding=1)  # 8x8
        self.out = nn.Conv2d(16, 4 + classes + masks, 1)
        self.proto = nn.Conv2d(16, masks, 3, padding=1)
        self.classes = classes
        # Default init gives outputs near 0: every score near 0.5, every
        # mask value near the threshold. Spread them out.
        with torch.no_grad():
            self.out.weight.mul_(8)
            self.proto.weight.mul_(4)

    def forward(self, x):
        f = torch.relu(self.stem(x))
        g = torch.relu(self.down(f))
        o = self.out(g)  # [N, 4 + C + M, 8, 8]
        n = o.shape[0]
        gy, gx = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
        cx = (gx + 0.5 + torch.tanh(o[:, 0])) * 8
        cy = (gy + 0.5 + torch.tanh(o[:, 1])) * 8
        w = 6 + 20 * torch.sigmoid(o[:, 2])
        h = 6 + 20 * torch.sigmoid(o[:, 3])
        scores = torch.sigmoid(3 * o[:, 4:4 + self.classes])
        # Prototype 0 is +1 with coefficient 0.2, so masks cover part of
        # their boxes rather than none of them.
        coef = 4 * o[:, 4 + self.classes:]
        coef = torch.cat([torch.full_like(coef[:, :1], 0.2), coef[:, 1:]], 1)
        head = torch.cat([torch.stack([cx, cy, w, h], 1), scores, coef], 1)
        protos = torch.tanh(self.proto(f))
        protos = torch.cat([torch.ones_like(protos[:, :1]), protos[:, 1:]], 1)
        return head.reshape(n, head.shape[1], 64), protos


class Many(nn.Module):
    def forward(self, x):
        n_anchors, classes = 8400, 100
        a = torch.arange(n_anchors, dtype=torch.float32)
        col = torch.remainder(a, 80)
        row = torch.div(a, 80, rounding_mode="floor")
        head = torch.zeros(4 + classes + 32, n_anchors)
        head[0] = 4 + 8 * col
        head[1] = 3 + 6 * row
        head[2] = 4
        head[3] = 4
        cls = torch.remainder(torch.arange(n_anchors), classes)
        head[4 + cls, torch.arange(n_anchors)] = 0.3 + 0.6 * a / n_anchors
        head[4 + classes] = 1
        protos = torch.zeros(32, 160, 160)
        protos[0] = 1
        zero = x.sum() * 0
        n = x.shape[0]
        return head.expand(n, -1, -1) + zero, protos.expand(n, -1, -1, -1) + zero


class Checker(nn.Module):
    def forward(self, x):
        n_anchors = 100
        a = torch.arange(n_anchors)
        head = torch.zeros(4 + 100 + 32, n_anchors)
        head[0] = 320
        head[1] = 320
        head[2] = 640
        head[3] = 640
        head[4 + a, a] = 0.9 - a.float() / 1000
        head[104] = 1
        r = torch.arange(160).view(160, 1)
        c = torch.arange(160).view(1, 160)
        protos = torch.zeros(32, 160, 160)
        protos[0] = 1 - 2 * torch.remainder(r + c, 2).float()
        zero = x.sum() * 0
        n = x.shape[0]
        return head.expand(n, -1, -1) + zero, protos.expand(n, -1, -1, -1) + zero


def sidecar(size, labels, **extra):
    return {"input_width": size, "input_height": size, **RAW_RGB, "task": "detection",
            "decoder": "yolov8-seg", "labels": labels, **extra}


def save(module, outdir, name, example, side):
    module.eval()
    with torch.no_grad():
        ts = torch.jit.trace(module, example)
    ts.save(os.path.join(outdir, name + ".pt"))
    write_json(os.path.join(outdir, name + ".json"), side)
    return torch.jit.load(os.path.join(outdir, name + ".pt"))


def check_margin(head, protos, dets, transform, frame, size):
    """No mask pixel within 1e-6 of the threshold: the element's masks are
    then exactly the reference's, whatever the summation order."""
    m = protos.shape[0]
    classes = head.shape[0] - 4 - m
    for d in dets:
        k = d["mask"]
        coef = head[4 + classes:, d["anchor"]]
        cells = np.tensordot(coef, protos, axes=1)
        sx, sy, ox, oy = transform
        cx0, cx1, wx = seg_reference.taps(k["x"], k["width"], sx, ox, protos.shape[2] / size,
                                          protos.shape[2])
        cy0, cy1, wy = seg_reference.taps(k["y"], k["height"], sy, oy, protos.shape[1] / size,
                                          protos.shape[1])
        top = cells[cy0][:, cx0] * (1 - wx) + cells[cy0][:, cx1] * wx
        bottom = cells[cy1][:, cx0] * (1 - wx) + cells[cy1][:, cx1] * wx
        value = top * (1 - wy)[:, None] + bottom * wy[:, None]
        if np.abs(value).min() < 1e-6:
            raise RuntimeError(f"a mask value of anchor {d['anchor']} lies on the threshold")


def check_against_torch_resize(head, protos):
    """The reference's sampling is PyTorch's bilinear resize (align_corners
    False): on a 64x64 frame equal to the input, a box covering it all, the
    mask is interpolate(coef . protos, 64x64) > 0."""
    for a in range(head.shape[1]):
        coef = head[6:, a]
        cells = torch.from_numpy(np.tensordot(coef, protos, axes=1))[None, None]
        want = torch.nn.functional.interpolate(cells, size=(64, 64), mode="bilinear",
                                               align_corners=False)[0, 0].numpy() > 0
        got = seg_reference.mask_of((0, 0, 64, 64), coef, protos, (1, 1, 0, 0), (64, 64),
                                    (64, 64), 0.5)
        if not np.array_equal(seg_reference.bitmap(got), want):
            raise RuntimeError(f"seg_reference differs from torch's bilinear resize (anchor {a})")


def fixed_cases(ts, outdir):
    head, protos = (t[0].double().numpy() for t in ts(torch.zeros(1, 3, 64, 64)))
    check_against_torch_resize(head, protos)
    cases = {}
    # Stretch: 128x128 -> 64x64. Letterbox: 160x128 -> 64x51 at row 6.
    for name, frame, transform in [("stretch_128x128", (128, 128), (0.5, 0.5, 0.0, 0.0)),
                                   ("letterbox_160x128", (160, 128), (0.4, 51 / 128, 0.0, 6.0))]:
        dets = seg_reference.decode(head, protos, transform, frame, (64, 64))
        check_margin(head, protos, dets, transform, frame, 64)
        cases[name] = {"frame": list(frame), "transform": list(transform), "detections": dets}
    areas = [d["mask"]["area"] for d in cases["stretch_128x128"]["detections"]]
    if len(areas) != 4 or areas[2] != 0 or areas[3] != 20 * 20:
        raise RuntimeError(f"seg_fixed: unexpected masks {areas}")
    write_json(os.path.join(outdir, "seg_fixed.expected.json"), cases)


def random_case(outdir):
    torch.manual_seed(0)
    module = RandomHead().eval()
    frame = torch.randint(0, 256, (64, 64, 3), dtype=torch.uint8)
    with open(os.path.join(outdir, "seg_random.frame.rgb"), "wb") as f:
        f.write(frame.numpy().tobytes())
    x = frame.permute(2, 0, 1).unsqueeze(0).float() / 255
    with torch.no_grad():
        head, protos = (t[0].double().numpy() for t in module(x))
    best = np.sort(head[4:7].max(axis=0))[::-1]
    # The first gap of 2e-3 after the 10th best: no score near the threshold.
    k = next((k for k in range(10, 30) if best[k - 1] - best[k] >= 2e-3), None)
    if k is None:
        raise RuntimeError("seg_random: no gap between anchor scores for the threshold")
    conf = float((best[k - 1] + best[k]) / 2)
    ts = save(module, outdir, "seg_random", x,
              sidecar(64, ["a", "b", "c"], confidence_threshold=conf, iou_threshold=0.45))
    with torch.no_grad():
        again = ts(x)[0][0].double().numpy()
    if np.abs(again - head).max() > 1e-5:
        raise RuntimeError("seg_random: reloaded output differs")
    dets = seg_reference.decode(head, protos, (1.0, 1.0, 0.0, 0.0), (64, 64), (64, 64), conf=conf)
    if len(dets) < 5:
        raise RuntimeError(f"seg_random: only {len(dets)} detections")
    write_json(os.path.join(outdir, "seg_random.expected.json"),
               {"confidence_threshold": conf, "detections": dets})


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    labels = ["scratch", "spot"]
    head, protos = fixed_outputs()
    x = torch.rand(1, 3, 64, 64)
    ts = save(Fixed(head, protos), outdir, "seg_fixed", x, sidecar(64, labels))
    fixed_cases(ts, outdir)
    nan_head = head.clone()
    nan_head[6, 0] = math.nan
    save(Fixed(nan_head, protos), outdir, "seg_nan", x, sidecar(64, labels))
    save(Fixed(head, protos.reshape(32, 256)), outdir, "seg_flat_protos", x, sidecar(64, labels))
    no_classes = torch.cat([head[:4], head[6:]])
    save(Fixed(no_classes, protos), outdir, "seg_no_classes", x, sidecar(64, labels))
    random_case(outdir)
    part = torch.zeros(4 + 2 + 32, 8)
    part[:4] = torch.tensor([[8.0 * a, 8, 4, 4] for a in range(8)]).t()
    part[4, :] = 0.1
    part[:4, 0] = torch.tensor([32.0, 32, 40, 40])
    part[:4, 1] = torch.tensor([30.0, 30, 8, 8])
    part[4, 1] = 0
    part[5, 1] = 0.8
    part[4, 0] = 0.9
    part[8, :2] = 10
    save(Fixed(part, protos), outdir, "seg_part", x, sidecar(64, ["bracket", "scratch"]))
    save(Many(), outdir, "seg_many", torch.rand(1, 3, 640, 640),
         sidecar(640, [str(i) for i in range(100)]))
    save(Checker(), outdir, "seg_checker", torch.rand(1, 3, 640, 640),
         sidecar(640, [str(i) for i in range(100)]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1])
    except Exception as e:  # meson only needs a non-zero status and a reason
        print(f"make_seg_test_models.py: error: {e}", file=sys.stderr)
        sys.exit(1)
