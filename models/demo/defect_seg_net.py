"""DefectSeg: the demo's small defect segmentation model, YOLOv8-seg layout.

Input: the whole 640x480 frame (RGB, pixel/255), so masks need no mapping
back. Backbone of 3x3 conv+BN+ReLU blocks to stride 16, a top-down link to
stride 8, per-scale heads (box, classes, 32 mask coefficients; separate 1x1
convs) and a prototype branch at stride 4 fed by the stride-8 features and
a stride-4 skip (defects are thin: a scratch is 5-8 px wide).

Outputs, as Ultralytics' YOLOv8-seg exports them:
  dets   [N, 4 + C + 32, A]: cx, cy, w, h in input pixels, C class scores
         after sigmoid, 32 mask coefficients (raw); A = 80*60 + 40*30
  protos [N, 32, H/4, W/4]
An instance's mask = sigmoid(coefficients . protos), cropped to its box and
upsampled to the input. Anchor-free, one prediction per grid cell:
  cx = (i + 0.5 + dx) * stride,  w = exp(dw) * stride   (same for y, h)
The grid is fixed by the constructor's input size (trace at that size); the
batch size is free. The network is fully convolutional up to `decode`, so
training runs `heads` on crops of frames.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

COEFFS = 32


def cbr(cin, cout, stride=1, dilation=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Head(nn.Module):
    def __init__(self, cin, classes):
        super().__init__()
        self.stem = cbr(cin, cin)
        self.box = nn.Conv2d(cin, 4, 1)
        self.cls = nn.Conv2d(cin, classes, 1)
        self.coef = nn.Conv2d(cin, COEFFS, 1)
        nn.init.constant_(self.cls.bias, -4.6)  # start at p = 0.01: most cells are background

    def forward(self, x):
        x = self.stem(x)
        return self.box(x), self.cls(x), self.coef(x)


def decode_level(box, cls, coef, grid, stride: float):
    """One level's raw head outputs -> [N, 4 + C + 32, h*w]."""
    box = box.flatten(2)
    xy = (box[:, :2] + grid) * stride
    wh = torch.exp(box[:, 2:].clamp(max=6.0)) * stride
    return torch.cat([xy, wh, torch.sigmoid(cls.flatten(2)), coef.flatten(2)], 1)


def make_grid(width, height, stride):
    gy, gx = torch.meshgrid(torch.arange(height // stride), torch.arange(width // stride),
                            indexing="ij")
    return torch.stack([gx, gy]).float().view(1, 2, -1) + 0.5


class DefectSeg(nn.Module):
    def __init__(self, classes=4, width=640, height=480):
        super().__init__()
        self.s2 = nn.Sequential(cbr(3, 16, 2), cbr(16, 24, 2))                      # stride 4
        self.s3 = nn.Sequential(cbr(24, 48, 2), cbr(48, 48))                        # stride 8
        self.s4 = nn.Sequential(cbr(48, 80, 2), cbr(80, 80), cbr(80, 80, dilation=2))  # 16
        self.lateral = nn.Conv2d(80, 48, 1)
        self.head3 = Head(48, classes)
        self.head4 = Head(80, classes)
        self.proto_in = nn.Conv2d(48, 24, 1)
        self.proto = nn.Sequential(cbr(24, 24), nn.Conv2d(24, COEFFS, 1))
        self.register_buffer("grid3", make_grid(width, height, 8))
        self.register_buffer("grid4", make_grid(width, height, 16))

    def heads(self, x):
        c2 = self.s2(x)
        c3 = self.s3(c2)
        c4 = self.s4(c3)
        p3 = c3 + F.interpolate(self.lateral(c4), scale_factor=2.0, mode="nearest")
        up = F.interpolate(self.proto_in(p3), scale_factor=2.0, mode="bilinear", align_corners=False)
        protos = self.proto(c2 + up)
        return self.head3(p3), self.head4(c4), protos

    def forward(self, x):
        (b3, k3, m3), (b4, k4, m4), protos = self.heads(x)
        dets = torch.cat([decode_level(b3, k3, m3, self.grid3, 8.0),
                          decode_level(b4, k4, m4, self.grid4, 16.0)], 2)
        return dets, protos
