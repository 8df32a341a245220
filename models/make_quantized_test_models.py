#!/usr/bin/python3
"""Int8 models for the C++ tests, each with .pt, .json and .expected.json
(outputs for a fixed input): tiny_int8 (plain FX conversion) and relu6_int8
(Relu6Net through quantize.py's graph passes: ReLU6 folded, the classifier
Linear turned into a 1x1 convolution).

Usage: make_quantized_test_models.py OUTDIR

Relu6Net is the float model the quantize.py test quantizes
(--module models/make_quantized_test_models.py:Relu6Net).

Net: conv(3->8,3x3)+BN+ReLU -> conv(8->16,3x3,s2)+ReLU -> avg pool -> linear(16->5),
input [N,3,32,48] (h 32, w 48), FX static quantization with the onednn
qconfig, calibrated on 32 seeded random frames, saved traced (not frozen).
The fixed input is the NHWC ramp value[i] = ((i*37) % 101)/50 - 1 the C++
tests use; the expected output is what this libtorch computes for it.
"""
import copy
import json
import os
import sys

import torch
import torch.nn as nn
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

H, W = 32, 48


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                               nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x):
        return self.f(x)


class Relu6Net(nn.Module):
    """MobileNetV2-style block for the quantize.py test: three conv+BN+ReLU6
    (one depthwise) that fold_relu6 removes, a residual add, a classifier.
    Input [N,3,32,48]; seeded weights so the test's figures repeat."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)

        def cbr(cin, cout, k, s=1, groups=1):
            return [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                    nn.BatchNorm2d(cout), nn.ReLU6()]
        self.stem = nn.Sequential(*cbr(3, 16, 3, 2))
        self.block = nn.Sequential(*cbr(16, 32, 1), *cbr(32, 32, 3, groups=32),
                                   nn.Conv2d(32, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x):
        x = self.stem(x)
        return self.head(x + self.block(x))


def ramp(n):
    i = torch.arange(n * H * W * 3)
    nhwc = (((i * 37) % 101).float() / 50 - 1).reshape(n, H, W, 3)
    return nhwc.permute(0, 3, 1, 2)  # channels_last view, like the engine's input


def write(out, name, ts_path, m, extra_sidecar=None):
    """Sidecar and expected outputs (int8 and the float original) on ramp(2)."""
    ts = torch.jit.load(ts_path)
    x = ramp(2)
    with torch.no_grad():
        y = ts(x)
        y_fp32 = m(x)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"input_width": W, "input_height": H, "mean": 0, "std": 1, "task": "raw",
                   "precision": "int8",
                   "quantization": {"backend": "onednn", "calibration": "random",
                                    **(extra_sidecar or {}), "forced": False}}, f, indent=2)
    with open(os.path.join(out, name + ".expected.json"), "w") as f:
        json.dump({"input": "ramp", "batch": 2, "height": H, "width": W,
                   "output": y.flatten().tolist(), "fp32_output": y_fp32.flatten().tolist()},
                  f, indent=2)


def relu6_int8(out):
    """Relu6Net quantized the way quantize.py does it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import quantize
    m = Relu6Net().eval()
    calib = torch.randn(32, 3, H, W, generator=torch.Generator().manual_seed(1))
    p = prepare_fx(copy.deepcopy(m), get_default_qconfig_mapping("onednn"),
                   example_inputs=(calib[:1],))
    with torch.no_grad():
        p(calib)
    q = convert_fx(p).eval()
    folded = quantize.fold_relu6(q)
    as_conv = quantize.linear_to_conv1x1(q, calib[:1])
    kinds = {type(mod).__name__ for mod in q.modules()}
    if folded != 3 or as_conv != 1 or "Linear" in kinds:
        sys.exit(f"relu6_int8: folded {folded}, linear_as_conv1x1 {as_conv}, modules {kinds}")
    path = os.path.join(out, "relu6_int8.pt")
    with torch.no_grad():
        torch.jit.trace(q, calib[:1]).save(path)
    write(out, "relu6_int8", path, m,
          {"relu6_folded": folded, "linear_as_conv1x1": as_conv})


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    torch.backends.quantized.engine = "onednn"
    m = Tiny().eval()
    with torch.no_grad():
        m.f[1].running_mean.uniform_(-0.2, 0.2)
        m.f[1].running_var.uniform_(0.5, 1.5)
    calib = torch.randn(32, 3, H, W)
    p = prepare_fx(m, get_default_qconfig_mapping("onednn"), example_inputs=(calib[:1],))
    with torch.no_grad():
        p(calib)
    q = convert_fx(p).eval()
    path = os.path.join(out, "tiny_int8.pt")
    with torch.no_grad():
        torch.jit.trace(q, calib[:1]).save(path)
    write(out, "tiny_int8", path, m)
    relu6_int8(out)


if __name__ == "__main__":
    main()
