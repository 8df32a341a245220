#!/usr/bin/python3
"""Test model for torchinfer's inference-region=tiles tests.

bright_box.pt  scripted; input [N,3,64,64] rgb, mean 0 std 1, task detection,
               decoder yolov5, one class "spot". Each image gives one anchor
               [cx, cy, w, h, objectness, class score]: the box around every
               pixel whose channel mean is above 0.5 (in model-input pixels),
               objectness 1 when there is one, else 0. A tile's detection is
               then exactly the bright pixels it saw, so the merge of the
               tiles' boxes can be checked to the pixel.

Usage: make_tile_test_models.py OUTDIR
"""
import json
import os
import sys

import torch
from torch import nn


class BrightBox(nn.Module):
    def forward(self, x):
        m = x.mean(dim=1) > 0.5  # [N, H, W]
        rows = m.any(dim=2)
        cols = m.any(dim=1)
        ys = torch.arange(m.shape[1], dtype=torch.float32).unsqueeze(0).expand(rows.shape)
        xs = torch.arange(m.shape[2], dtype=torch.float32).unsqueeze(0).expand(cols.shape)
        big = torch.full_like(ys, 1e6)
        y0 = torch.where(rows, ys, big).min(dim=1).values
        y1 = torch.where(rows, ys, -torch.ones_like(ys)).max(dim=1).values + 1
        big = torch.full_like(xs, 1e6)
        x0 = torch.where(cols, xs, big).min(dim=1).values
        x1 = torch.where(cols, xs, -torch.ones_like(xs)).max(dim=1).values + 1
        found = rows.any(dim=1).to(torch.float32)
        # No bright pixel: a zero box with objectness 0 (dropped by torchnms).
        x0, x1, y0, y1 = x0 * found, x1 * found, y0 * found, y1 * found
        out = torch.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0, found,
                           torch.ones_like(found)], dim=1)
        return out.unsqueeze(1)  # [N, 1, 6]


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "bright_box.pt")
    torch.jit.script(BrightBox().eval()).save(path)
    with open(os.path.join(outdir, "bright_box.json"), "w") as f:
        json.dump({"channel_order": "rgb", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0],
                   "input_width": 64, "input_height": 64, "task": "detection",
                   "decoder": "yolov5", "labels": ["spot"]}, f, indent=2)
        f.write("\n")
    x = torch.zeros(2, 3, 64, 64)
    x[1, :, 10:20, 30:34] = 1.0
    y = torch.jit.load(path)(x)
    want = torch.tensor([[0.0, 0, 0, 0, 0, 1], [32.0, 15, 4, 10, 1, 1]]).unsqueeze(1)
    if not torch.equal(y, want):
        raise RuntimeError("bright_box: unexpected output %s" % y)


if __name__ == "__main__":
    main(sys.argv[1])
