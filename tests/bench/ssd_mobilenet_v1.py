#!/usr/bin/python3
"""An SSD-MobileNet-v1-shaped detector (300x300, 91 COCO classes, 1917
anchors) with random weights, in fp32 and int8, for speed benchmarks only
(issue 37: the field's density figure is SSD-MobileNet-v1 INT8 with decode;
random weights make the figure independent of training).

The shape follows TensorFlow's ssd_mobilenet_v1_coco: MobileNet-v1 (depth
1.0, ReLU6, batch norm), features from conv11 (19x19x512) and conv13
(10x10x1024), four extra layers (5x5x512, 3x3x256, 2x2x256, 1x1x128), a 1x1
box and class predictor per feature map (3 anchors on the first, 6 on the
others). The anchor decoding and the softmax are part of the model and stay
in float, so the output is the project's "ssd" layout (src/decode/detection.h):
"boxes" [N, 1917, 4] x_min, y_min, x_max, y_max in 0..1 and "scores"
[N, 1917, 91], class 0 the background.

int8: FX static quantization for oneDNN, the same recipe as models/quantize.py
(its ReLU6 folding included), calibrated on random frames, with the two
torch.cat of the heads left in float: a quantized cat of inputs with other
scales dequantizes, cats and requantizes, and the decoder dequantizes again
(0.45 core-ms of a 5.6 core-ms forward; docs/performance.md, "What bounds
the forward"). An int8 file made before that change is remade.

  /usr/bin/python3 tests/bench/ssd_mobilenet_v1.py --out-dir build/bench-models
writes ssd_mobilenet_v1.pt / _int8.pt with their sidecars (skips files that exist).
"""
import argparse
import copy
import json
import math
import os
import sys

import torch
from torch import nn

ANCHORS = (3, 6, 6, 6, 6, 6)
CLASSES = 91


def conv_bn(cin, cout, k=1, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


def separable(cin, cout, stride):
    return nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, cout))


def anchors_for(sizes):
    """Centre-size anchors (cx, cy, w, h in 0..1), TF's SSD generator shape."""
    out = []
    scales = [0.2 + (0.95 - 0.2) * i / (len(sizes) - 1) for i in range(len(sizes))] + [1.0]
    for i, (s, a) in enumerate(zip(sizes, ANCHORS)):
        ratios = (1.0, 2.0, 0.5) if a == 3 else (1.0, 2.0, 0.5, 3.0, 1.0 / 3.0)
        for y in range(s):
            for x in range(s):
                cx, cy = (x + 0.5) / s, (y + 0.5) / s
                for r in ratios:
                    out.append((cx, cy, scales[i] * math.sqrt(r), scales[i] / math.sqrt(r)))
                if a == 6:
                    g = math.sqrt(scales[i] * scales[i + 1])
                    out.append((cx, cy, g, g))
    return torch.tensor(out)


class Decode(nn.Module):
    """Box deltas -> corner boxes (TF's box coder, scales 10, 10, 5, 5);
    logits -> softmax."""

    def __init__(self):
        super().__init__()
        self.register_buffer("anchors", anchors_for((19, 10, 5, 3, 2, 1)))

    def forward(self, loc, conf):
        a = self.anchors
        cxcy = a[:, :2] + loc[..., :2] / 10.0 * a[:, 2:]
        wh = a[:, 2:] * torch.exp(loc[..., 2:] / 5.0)
        boxes = torch.cat([cxcy - wh / 2, cxcy + wh / 2], dim=-1).clamp(0.0, 1.0)
        return boxes, torch.softmax(conf, dim=-1)


class SSDMobileNetV1(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
               (256, 512, 2)] + [(512, 512, 1)] * 5
        self.stem = conv_bn(3, 32, 3, 2)
        self.body11 = nn.Sequential(*[separable(a, b, s) for a, b, s in cfg])
        self.body13 = nn.Sequential(separable(512, 1024, 2), separable(1024, 1024, 1))
        self.extras = nn.ModuleList([
            nn.Sequential(conv_bn(1024, 256), conv_bn(256, 512, 3, 2)),
            nn.Sequential(conv_bn(512, 128), conv_bn(128, 256, 3, 2)),
            nn.Sequential(conv_bn(256, 128), conv_bn(128, 256, 3, 2)),
            nn.Sequential(conv_bn(256, 64), conv_bn(64, 128, 3, 2))])
        chans = (512, 1024, 512, 256, 256, 128)
        self.loc = nn.ModuleList([nn.Conv2d(c, a * 4, 1) for c, a in zip(chans, ANCHORS)])
        self.conf = nn.ModuleList([nn.Conv2d(c, a * CLASSES, 1) for c, a in zip(chans, ANCHORS)])
        self.decode = Decode()

    def forward(self, x):
        f11 = self.body11(self.stem(x))
        feats = [f11, self.body13(f11)]
        for e in self.extras:
            feats.append(e(feats[-1]))
        n = x.shape[0]
        loc = torch.cat([h(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
                         for h, f in zip(self.loc, feats)], 1)
        conf = torch.cat([h(f).permute(0, 2, 3, 1).reshape(n, -1, CLASSES)
                          for h, f in zip(self.conf, feats)], 1)
        return self.decode(loc, conf)


def sidecar(precision):
    what = "int8, heads concatenated in float" if precision == "int8" else precision
    return {"name": f"SSD-MobileNet-v1-shaped detector, random weights ({what}; speed only)",
            "input_width": 300, "input_height": 300, "channel_order": "rgb",
            "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "task": "detection",
            "decoder": "ssd", "confidence_threshold": 0.5, "iou_threshold": 0.6,
            **({"precision": "int8"} if precision == "int8" else {})}


def quantize(model, frames):
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../models"))
    from quantize import fold_relu6
    torch.backends.quantized.engine = "onednn"
    qconfig = (get_default_qconfig_mapping("onednn").set_module_name("decode", None)
               .set_object_type(torch.cat, None))
    prepared = prepare_fx(copy.deepcopy(model), qconfig, example_inputs=(frames[:1],))
    with torch.no_grad():
        prepared(frames)
    q = convert_fx(prepared).eval()
    print(f"ssd_mobilenet_v1: folded {fold_relu6(q)} ReLU6 into quantized convolutions")
    return q


def current(path, precision):
    """path exists and its sidecar is this recipe's."""
    try:
        with open(os.path.splitext(path)[0] + ".json") as f:
            return os.path.exists(path) and json.load(f) == sidecar(precision)
    except (OSError, ValueError):
        return False


def save(model, example, path, precision):
    with torch.no_grad():
        torch.jit.trace(model, example).save(path)
    with open(os.path.splitext(path)[0] + ".json", "w") as f:
        json.dump(sidecar(precision), f, indent=2)
    print(f"ssd_mobilenet_v1: wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    model = SSDMobileNetV1().eval()
    # Random weights give random batch-norm statistics; keep activations in
    # a sane range so the int8 calibration sees realistic spreads.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_var.fill_(4.0)
    x = torch.rand(8, 3, 300, 300).contiguous(memory_format=torch.channels_last) * 2 - 1
    fp32 = os.path.join(args.out_dir, "ssd_mobilenet_v1.pt")
    if not os.path.exists(fp32):
        save(model, x[:1], fp32, "fp32")
    int8 = os.path.join(args.out_dir, "ssd_mobilenet_v1_int8.pt")
    if not current(int8, "int8"):
        save(quantize(model, x), x[:1], int8, "int8")


if __name__ == "__main__":
    main()
