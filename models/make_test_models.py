#!/usr/bin/python3
"""Generate tiny deterministic TorchScript models for the C++ test suite.

Usage: make_test_models.py OUTDIR

Every model is built right after torch.manual_seed(0), saved as plain
traced/scripted TorchScript (never frozen: frozen / optimize_for_inference
files do not load in C++ libtorch 1.13), loaded back and re-checked.
Inputs are float32 NCHW; the engine passes them in channels_last memory.

Models (sidecar = <name>.json beside the .pt):

tiny_classifier.pt  traced; conv(3->8,3x3)+BN+ReLU -> conv(8->16,3x3,s2)+BN+ReLU
    -> adaptive avg pool -> linear(16->5). Input [N,3,32,48] (width 48, height 32).
    BN running stats/affine are non-default so folding at load time matters.
    Works for any batch size. Sidecar: rgb, mean [0.5,0.4,0.3],
    std [0.25,0.2,0.15], classification, labels tiny_classifier.labels
    (alpha, beta, gamma, delta, epsilon), top_k 3. Output [N,5] logits.
identity.pt         traced x * 1.0. Input [N,3,6,8] (w 8, h 6), rgb, mean 0,
    std 1, task raw. Output equals input (it may keep channels_last strides).
gray_identity.pt    same with 1 channel, channel_order gray, mean [0], std [1].
tuple_output.pt     traced; input [N,3,16,16] rgb, mean 0 std 1, raw. Returns
    (mean over H,W [N,3], max over H,W [N,3]).
dict_output.pt      scripted; input [N,3,16,16] rgb, mean 0 std 1, raw. Returns
    Dict[str, Tensor] {"mean": mean over H,W [N,3], "sum": sum over H,W [N,3]}.
two_inputs.pt       scripted forward(x, y) -> x + y. No sidecar.
returns_string.pt   scripted forward(x) -> str, always "not a tensor". No sidecar.
returns_int_list.pt scripted forward(x) -> List[int], i.e. x.size(). No sidecar.
grid_probe.pt       traced; input [N,3,64,64] rgb, mean 0 std 1, raw. Output
    [N,4,4,3] contiguous: out[n,i,j,c] = mean of channel c over grid cell
    row i, column j (each cell 16x16 pixels).
uint8_input.pt      traced; takes uint8 [N,3,6,8] (sidecar input_dtype "uint8",
    rgb, raw) and returns x.float() * 2 - 1.
wrong_channels.pt   traced conv expecting 1 input channel, but its sidecar says
    rgb 16x16, so running it through the engine must fail with a shape error.
yolo_candidates.pt  traced YOLOv5-layout detector: input [N,3,256,320] (w 320,
    h 256), rgb, mean 0 std 1; output [N,8,8] (cx, cy, w, h, objectness, 3
    class scores) = the fixed candidates in YOLO_CANDIDATES, except that
    anchor 4's objectness is the model input's red value at (x 160, y 128),
    so a white frame gives it 1.0 and a black one 0. Sidecar: task detection,
    decoder yolov5, labels bolt/nut/washer, confidence 0.25, IoU 0.45. The
    expected boxes after NMS for each source size and letterbox mode are
    worked out by hand in tests/pipelines/test_launch.cpp (Detection tests).
"""
import json
import os
import sys
from typing import Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class Identity(nn.Module):
    def forward(self, x):
        return x * 1.0


class TupleOutput(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3)), x.amax(dim=(2, 3))


class DictOutput(nn.Module):
    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"mean": x.mean(dim=(2, 3)), "sum": x.sum(dim=(2, 3))}


class TwoInputs(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class ReturnsString(nn.Module):
    def forward(self, x: torch.Tensor) -> str:
        return "not a tensor"


class ReturnsIntList(nn.Module):
    def forward(self, x: torch.Tensor) -> List[int]:
        return x.size()


class GridProbe(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 4).permute(0, 2, 3, 1).contiguous()


class WrongChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)

    def forward(self, x):
        return self.conv(x)


# cx, cy, w, h, objectness, bolt, nut, washer (model-input pixels).
YOLO_CANDIDATES = [
    [80, 64, 64, 48, 0.9, 1, 0, 0],      # 0 bolt 0.9
    [84, 66, 64, 48, 0.8, 1, 0, 0],      # 1 bolt, IoU 0.82 with 0: suppressed
    [84, 66, 64, 48, 0.7, 0, 1, 0],      # 2 nut over 0: kept per class, not agnostic
    [240, 160, 80, 60, 0.6, 0, 0.25, 1],  # 3 washer 0.6
    [160, 128, 40, 40, -1, 1, 0, 0],     # 4 bolt, objectness = input red at the centre
    [300, 10, 40, 20, 0.95, 0, 1, 0],    # 5 nut in the top rows (letterbox padding at 16:9)
    [20, 240, 60, 40, 0.5, 1, 0, 0],     # 6 bolt over the left/bottom edges
    [150, 200, 30, 30, 0.2, 1, 0, 0],    # 7 below the confidence threshold
]


class YoloCandidates(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("candidates", torch.tensor(YOLO_CANDIDATES, dtype=torch.float32))
        mask = torch.zeros(8, 8)
        mask[4, 4] = 1.0
        self.register_buffer("mask", mask)

    def forward(self, x):
        n = x.shape[0]
        red = x[:, 0, 128, 160].reshape(n, 1, 1)
        base = self.candidates.unsqueeze(0).expand(n, 8, 8)
        # Exactly the candidates (0 * sum keeps the input in the graph), with
        # the masked slot replaced by the red value.
        return base * (1 - self.mask) + red * self.mask + 0 * x.sum(dim=(1, 2, 3)).reshape(n, 1, 1)


RAW_RGB = {"channel_order": "rgb", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0],
           "task": "raw"}


class ByteInput(nn.Module):
    """Takes raw uint8 pixels and normalises them itself (x * 2 - 1)."""

    def forward(self, x):
        return x.float() * 2.0 - 1.0


def perturb_batchnorm(model):
    # Default BN (mean 0, var 1, gamma 1, beta 0) is a no-op, which would hide
    # bugs in the engine's freeze/fold step.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.3)
            m.running_var.copy_(torch.rand(n, generator=g) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.2)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def save(module, outdir, name, example=None, script=False, sidecar=None):
    module.eval()
    with torch.no_grad():
        ts = torch.jit.script(module) if script else torch.jit.trace(module, example)
    path = os.path.join(outdir, name + ".pt")
    ts.save(path)
    if sidecar is not None:
        write_json(os.path.join(outdir, name + ".json"), sidecar)
    return torch.jit.load(path), module


def check_close(a, b, what):
    if not torch.allclose(a, b, atol=1e-5):
        raise RuntimeError(f"{what}: reloaded output differs from eager")


def main(outdir):
    torch.set_num_threads(2)
    os.makedirs(outdir, exist_ok=True)
    cl = torch.channels_last

    torch.manual_seed(0)
    m = TinyClassifier()
    perturb_batchnorm(m)
    labels = ["alpha", "beta", "gamma", "delta", "epsilon"]
    ts, m = save(m, outdir, "tiny_classifier", torch.rand(1, 3, 32, 48), sidecar={
        "input_width": 48, "input_height": 32, "channel_order": "rgb",
        "mean": [0.5, 0.4, 0.3], "std": [0.25, 0.2, 0.15],
        "task": "classification", "labels": "tiny_classifier.labels", "top_k": 3})
    with open(os.path.join(outdir, "tiny_classifier.labels"), "w") as f:
        f.write("\n".join(labels) + "\n")
    x = torch.randn(4, 3, 32, 48)
    with torch.no_grad():
        check_close(ts(x.to(memory_format=cl)), m(x), "tiny_classifier batch 4")

    torch.manual_seed(0)
    ts, _ = save(Identity(), outdir, "identity", torch.rand(1, 3, 6, 8),
                 sidecar={"input_width": 8, "input_height": 6, **RAW_RGB})
    x = torch.rand(2, 3, 6, 8)
    check_close(ts(x.to(memory_format=cl)), x, "identity")

    torch.manual_seed(0)
    ts, _ = save(Identity(), outdir, "gray_identity", torch.rand(1, 1, 6, 8), sidecar={
        "input_width": 8, "input_height": 6, "channel_order": "gray",
        "mean": [0.0], "std": [1.0], "task": "raw"})
    x = torch.rand(1, 1, 6, 8)
    check_close(ts(x), x, "gray_identity")

    torch.manual_seed(0)
    ts, m = save(TupleOutput(), outdir, "tuple_output", torch.rand(1, 3, 16, 16),
                 sidecar={"input_width": 16, "input_height": 16, **RAW_RGB})
    x = torch.rand(3, 3, 16, 16)
    for a, b in zip(ts(x.to(memory_format=cl)), m(x)):
        check_close(a, b, "tuple_output")

    torch.manual_seed(0)
    ts, m = save(DictOutput(), outdir, "dict_output", script=True,
                 sidecar={"input_width": 16, "input_height": 16, **RAW_RGB})
    x = torch.rand(2, 3, 16, 16)
    out, ref = ts(x), m(x)
    if sorted(out) != ["mean", "sum"]:
        raise RuntimeError("dict_output: wrong keys")
    for k in ref:
        check_close(out[k], ref[k], "dict_output " + k)

    torch.manual_seed(0)
    ts, _ = save(TwoInputs(), outdir, "two_inputs", script=True)
    x, y = torch.rand(1, 3, 4, 4), torch.rand(1, 3, 4, 4)
    check_close(ts(x, y), x + y, "two_inputs")

    torch.manual_seed(0)
    ts, _ = save(ReturnsString(), outdir, "returns_string", script=True)
    if ts(torch.rand(1)) != "not a tensor":
        raise RuntimeError("returns_string: wrong value")

    torch.manual_seed(0)
    ts, _ = save(ReturnsIntList(), outdir, "returns_int_list", script=True)
    if ts(torch.rand(1, 3, 5, 7)) != [1, 3, 5, 7]:
        raise RuntimeError("returns_int_list: wrong value")

    torch.manual_seed(0)
    ts, _ = save(GridProbe(), outdir, "grid_probe", torch.rand(1, 3, 64, 64),
                 sidecar={"input_width": 64, "input_height": 64, **RAW_RGB})
    x = torch.rand(2, 3, 64, 64)
    ref = x.reshape(2, 3, 4, 16, 4, 16).mean(dim=(3, 5)).permute(0, 2, 3, 1)
    out = ts(x.to(memory_format=cl))
    if out.shape != (2, 4, 4, 3) or not out.is_contiguous():
        raise RuntimeError("grid_probe: wrong shape/layout")
    check_close(out, ref, "grid_probe")

    torch.manual_seed(0)
    ts, m = save(WrongChannels(), outdir, "wrong_channels", torch.rand(1, 1, 16, 16),
                 sidecar={"input_width": 16, "input_height": 16, **RAW_RGB})
    try:
        ts(torch.rand(1, 3, 16, 16))
    except RuntimeError:
        pass
    else:
        raise RuntimeError("wrong_channels: 3-channel input unexpectedly worked")

    torch.manual_seed(0)
    ts, _ = save(YoloCandidates(), outdir, "yolo_candidates", torch.rand(1, 3, 256, 320), sidecar={
        "input_width": 320, "input_height": 256, **RAW_RGB, "task": "detection",
        "decoder": "yolov5", "labels": ["bolt", "nut", "washer"],
        "confidence_threshold": 0.25, "iou_threshold": 0.45})
    x = torch.rand(2, 3, 256, 320)
    out = ts(x.to(memory_format=cl))
    want = torch.tensor(YOLO_CANDIDATES).expand(2, 8, 8).clone()
    want[:, 4, 4] = x[:, 0, 128, 160]
    if out.shape != (2, 8, 8):
        raise RuntimeError("yolo_candidates: wrong shape")
    check_close(out, want, "yolo_candidates")

    ts, _ = save(ByteInput(), outdir, "uint8_input", torch.randint(0, 256, (1, 3, 6, 8), dtype=torch.uint8),
                 sidecar={"input_width": 8, "input_height": 6, "channel_order": "rgb",
                          "input_dtype": "uint8", "task": "raw"})
    x = torch.randint(0, 256, (2, 3, 6, 8), dtype=torch.uint8)
    check_close(ts(x), x.float() * 2.0 - 1.0, "uint8_input")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1])
    except Exception as e:  # meson only needs a non-zero status and a reason
        print(f"make_test_models.py: error: {e}", file=sys.stderr)
        sys.exit(1)
