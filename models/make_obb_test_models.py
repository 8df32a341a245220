#!/usr/bin/python3
"""Test models for torchnms decoder=yolov8-obb (run by meson).

obb_fixed.pt      traced; input [N,3,320,320] rgb, mean 0 std 1; returns the
                  same [N, 7, 7] YOLOv8-obb output for any image (labels
                  bracket, washer; decoder yolov8-obb in its sidecar): a
                  bracket at (100, 80) 60x20 turned pi/6, a weaker bracket
                  next to it (suppressed by rotated NMS), a washer at
                  (220, 200) 40x40 turned -pi/4, a score below the
                  threshold, two that cross axis-aligned but not rotated,
                  and a confident one of zero width (counted as invalid).
obb_head.pt       a random-weight oriented-box head (seeded): input
                  [N,3,640,640] rgb, mean 0 std 1; three levels (strides 8,
                  16, 32: 8400 anchors), 3 classes; boxes from distances
                  to the sides rotated by the angle (the usual rotated
                  distance-to-box decoding, written here), class scores
                  sigmoid, angle (sigmoid - 0.25) * pi: [N, 3 + 5, 8400].
obb_head.expected.json  models/obb_reference.py's detections of obb_head on
                  the test frames (pattern() below): "square" 640x640, and
                  "letterbox" 1280x960 with keep-aspect-ratio (area 2:1,
                  80 rows of 114 above and below), each with the
                  thresholds (set as torchnms properties by the test)
                  chosen so that no decision lies within 1e-3 of one (a
                  C++/Python rounding difference cannot flip it).

Usage: make_obb_test_models.py OUTDIR
"""
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import obb_reference as ref  # noqa: E402

NC = 3
MARGIN = 1e-3


def pattern(width, height):
    """The test frames' RGB bytes, a hash of (x, y, channel) (no repeats, so
    no two anchors score alike); tests/elements/test_torchnms_obb.cpp makes
    the same."""
    y, x = np.mgrid[0:height, 0:width].astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    chans = []
    for c in range(3):
        h = (x * np.uint64(374761393) + y * np.uint64(668265263) + np.uint64(c * 2246822519)) & m
        h = ((h ^ (h >> np.uint64(13))) * np.uint64(1274126177)) & m
        chans.append((h >> np.uint64(24)) & np.uint64(255))
    return np.stack(chans, axis=-1).astype(np.uint8)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


class Fixed(nn.Module):
    def __init__(self, out):
        super().__init__()
        self.register_buffer("out", out)

    def forward(self, x):
        return self.out.expand(x.shape[0], -1, -1) + 0 * x.mean()


def fixed_output():
    p = math.pi
    rows = [  # cx, cy, w, h, bracket, washer, angle
        [100, 80, 60, 20, 0.9, 0.0, p / 6],
        [104, 82, 60, 20, 0.8, 0.0, p / 6],
        [220, 200, 40, 40, 0.1, 0.7, -p / 4],
        [300, 300, 10, 10, 0.1, 0.2, 0.0],
        [160, 260, 100, 10, 0.6, 0.0, p / 4],
        [170, 270, 100, 10, 0.5, 0.0, -p / 4 + 0.0],
        [50, 50, 0, 10, 0.95, 0.0, 0.0],  # zero width: dropped and counted
    ]
    return torch.tensor(rows, dtype=torch.float32).t().unsqueeze(0)


class ObbHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1),
                                  nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.down = nn.ModuleList([nn.Conv2d(8, 8, 3, 2, 1), nn.Conv2d(8, 8, 3, 2, 1)])
        self.heads = nn.ModuleList([nn.Conv2d(8, 4 + NC + 1, 1) for _ in range(3)])
        # Default init varies too little over a smooth frame: spread the
        # scores, sizes and angles over their whole ranges.
        with torch.no_grad():
            for m in list(self.stem) + list(self.down):
                if isinstance(m, nn.Conv2d):
                    m.weight.mul_(3.0)
            for h in self.heads:
                h.weight.mul_(4.0)

    def level(self, f, head, stride: int):
        o = head(f)
        n, _, h, w = o.shape
        ys, xs = torch.meshgrid(torch.arange(h, dtype=o.dtype), torch.arange(w, dtype=o.dtype),
                                indexing="ij")
        ax, ay = (xs + 0.5).reshape(1, -1), (ys + 0.5).reshape(1, -1)
        o = o.reshape(n, 4 + NC + 1, h * w)
        d = nn.functional.softplus(o[:, :4]) * 2.0  # left, top, right, bottom in cells
        theta = (torch.sigmoid(o[:, 4 + NC]) - 0.25) * math.pi
        xf, yf = (d[:, 2] - d[:, 0]) / 2, (d[:, 3] - d[:, 1]) / 2
        c, s = torch.cos(theta), torch.sin(theta)
        cx = (ax + xf * c - yf * s) * stride
        cy = (ay + xf * s + yf * c) * stride
        w_ = (d[:, 0] + d[:, 2]) * stride
        h_ = (d[:, 1] + d[:, 3]) * stride
        cls = torch.sigmoid(o[:, 4:4 + NC] * 3.0 - 2.0)
        return torch.cat([cx[:, None], cy[:, None], w_[:, None], h_[:, None], cls,
                          theta[:, None]], 1)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = torch.relu(self.down[0](p3))
        p5 = torch.relu(self.down[1](p4))
        return torch.cat([self.level(p3, self.heads[0], 8), self.level(p4, self.heads[1], 16),
                          self.level(p5, self.heads[2], 32)], 2)


def letterbox_input(frame):
    """1280x960 -> 640x480 by 2x2 means, centred in 640x640 with 114."""
    small = frame.astype(np.float32).reshape(480, 2, 640, 2, 3).mean(axis=(1, 3))
    canvas = np.full((640, 640, 3), 114.0, np.float32)
    canvas[80:560] = small
    return canvas


def margins_ok(out, conf, iou, frame_size, scale, offset):
    """No score within MARGIN of conf, no best class within MARGIN of the
    second, no NMS overlap within MARGIN of iou."""
    o = np.asarray(out[0], np.float64)
    scores = np.sort(o[4:4 + NC], axis=0)
    near = scores[-1] >= conf - MARGIN
    if np.any(np.abs(scores[-1] - conf) < MARGIN) or np.any((scores[-1] - scores[-2])[near] < MARGIN):
        return False
    kept = []
    for _, _, cls, box in ref.candidates(out, conf):
        same = [k for k in kept if k[1] == cls]
        overl = [ref.rotated_iou(k[0], box) for k in same]
        if any(abs(v - iou) < MARGIN for v in overl):
            return False
        if not any(v > iou for v in overl):
            kept.append((box, cls))
    return True


def expected(model, frame_size, x, scale, offset, conf, iou):
    out = model(x).detach().numpy()
    if not margins_ok(out, conf, iou, frame_size, scale, offset):
        return None
    return ref.decode(out, conf, iou, 300, scale, offset, frame_size)


def make_head(outdir):
    """A seed and, per frame, thresholds (torchnms properties in the test)
    whose decisions all clear MARGIN, with 20..199 detections."""
    frames = {"square": (pattern(640, 640), (640, 640), (1.0, 1.0), (0.0, 0.0)),
              "letterbox": (pattern(1280, 960), (1280, 960), (0.5, 0.5), (0.0, 80.0))}
    grid = [(c / 1000, i) for c in range(950, 300, -7) for i in (0.45, 0.4, 0.5)]
    for seed in range(20):
        torch.manual_seed(seed)
        model = ObbHead().eval()
        cases = {}
        for name, (img, size, scale, offset) in frames.items():
            inp = img.astype(np.float32) if name == "square" else letterbox_input(img)
            x = torch.from_numpy(inp / 255.0).permute(2, 0, 1)[None].float()
            for conf, iou in grid:
                with torch.no_grad():
                    dets = expected(model, size, x, scale, offset, conf, iou)
                if dets is not None and 20 <= len(dets) < 200:
                    cases[name] = {"confidence_threshold": conf, "iou_threshold": iou,
                                   "detections": dets}
                    break
        if len(cases) == len(frames):
            return model, seed, cases
    raise RuntimeError("obb_head: no seed whose decisions clear the margins")


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    plain = {"channel_order": "rgb", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0],
             "task": "detection", "decoder": "yolov8-obb"}

    x = torch.rand(1, 3, 320, 320)
    torch.jit.trace(Fixed(fixed_output()).eval(), x).save(os.path.join(outdir, "obb_fixed.pt"))
    write_json(os.path.join(outdir, "obb_fixed.json"),
               dict(plain, input_width=320, input_height=320, labels=["bracket", "washer"]))

    model, seed, cases = make_head(outdir)
    x = torch.rand(1, 3, 640, 640)
    traced = torch.jit.trace(model, x)
    if not torch.allclose(traced(x), model(x)):
        raise RuntimeError("obb_head: trace differs")
    traced.save(os.path.join(outdir, "obb_head.pt"))
    write_json(os.path.join(outdir, "obb_head.json"),
               dict(plain, input_width=640, input_height=640, max_detections=300))
    write_json(os.path.join(outdir, "obb_head.expected.json"), {"seed": seed, **cases})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
