"""PartsDetector: the demo's small two-scale detector, YOLOv5 output layout.

Backbone of 3x3 conv+BN+ReLU blocks down to stride 16, a top-down link to
stride 8 (small objects: defects) and per-scale heads with separate 1x1
convs for box, objectness and classes (separate so int8 quantization gives
each its own scale). Anchor-free, one prediction per grid cell:
  cx = (i + 0.5 + dx) * stride,  w = exp(dw) * stride   (same for y, h)
`decode` turns the heads into one tensor [N, A, 5 + C] of cx, cy, w, h in
input pixels, sigmoid objectness and sigmoid class scores; A = sum of H*W of
the two grids. The grid is fixed by the input size given to the
constructor; the batch size is free (nothing in forward depends on it).

Kept in its own file so quantize.py can build it (--module) and keep
`decode` in float (--keep-float decode).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def cbr(cin, cout, stride=1, dilation=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Head(nn.Module):
    def __init__(self, cin, classes):
        super().__init__()
        self.stem = cbr(cin, cin)
        self.box = nn.Conv2d(cin, 4, 1)
        self.obj = nn.Conv2d(cin, 1, 1)
        self.cls = nn.Conv2d(cin, classes, 1)
        for conv in (self.obj, self.cls):  # start at p = 0.01: most cells are background
            nn.init.constant_(conv.bias, -4.6)

    def forward(self, x):
        x = self.stem(x)
        return self.box(x), self.obj(x), self.cls(x)


class Decode(nn.Module):
    """Raw head outputs -> [N, A, 5 + C] (float math; exp/sigmoid)."""

    def __init__(self, width, height, strides):
        super().__init__()
        self.strides = strides
        for k, s in enumerate(strides):
            gy, gx = torch.meshgrid(torch.arange(height // s), torch.arange(width // s), indexing="ij")
            self.register_buffer(f"grid{k}", torch.stack([gx, gy]).float().view(1, 2, -1) + 0.5)

    def forward(self, p3_box, p3_obj, p3_cls, p4_box, p4_obj, p4_cls):
        rows = []
        for k, (box, obj, cls) in enumerate(((p3_box, p3_obj, p3_cls), (p4_box, p4_obj, p4_cls))):
            s = float(self.strides[k])
            box = box.flatten(2)
            xy = (box[:, :2] + getattr(self, f"grid{k}")) * s
            wh = torch.exp(box[:, 2:].clamp(max=6.0)) * s
            rows.append(torch.cat([xy, wh, torch.sigmoid(obj.flatten(2)),
                                   torch.sigmoid(cls.flatten(2))], 1))
        return torch.cat(rows, 2).permute(0, 2, 1)


class PartsDetector(nn.Module):
    def __init__(self, classes=6, width=320, height=240):
        super().__init__()
        self.s2 = nn.Sequential(cbr(3, 16, 2), cbr(16, 32, 2))                    # stride 4
        self.s3 = nn.Sequential(cbr(32, 64, 2), cbr(64, 64))                      # stride 8
        self.s4 = nn.Sequential(cbr(64, 96, 2), cbr(96, 96), cbr(96, 96, dilation=2))  # 16
        self.lateral = nn.Conv2d(96, 64, 1)
        self.head3 = Head(64, classes)
        self.head4 = Head(96, classes)
        self.decode = Decode(width, height, (8, 16))

    def heads(self, x):
        c3 = self.s3(self.s2(x))
        c4 = self.s4(c3)
        p3 = c3 + F.interpolate(self.lateral(c4), scale_factor=2.0, mode="nearest")
        return self.head3(p3) + self.head4(c4)

    def forward(self, x):
        return self.decode(*self.heads(x))
