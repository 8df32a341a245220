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
pixel_probe.pt      traced; input [N,3,224,224] rgb, mean 0 std 1, raw (any size
    works). Output [N,2,2,3] contiguous: the model input's top-left 2x2
    pixels. A model that costs next to nothing, so a benchmark of the
    element measures its own per-frame work (tests/bench/bayer.sh).
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
nan_classifier.pt   traced; input [N,1,8,8] gray, mean 0 std 1, classification,
    labels a/b/c/d. Scores [N,4] = log(m - 0.5) * (-1, -2, -3, -4), m = the
    frame's mean (0..1): a white frame gives finite scores (label d, ids 3),
    any frame darker than mid-grey gives NaN, exactly mid-grey -inf.
nan_detector.pt     traced YOLOv5 layout: input [N,3,64,64] rgb, mean 0 std 1,
    detection, labels bolt/nut/washer. Output [N,2,8]: two candidates (bolt
    0.9 at (16,16) 16x16, washer 0.8 at (44,40) 20x16), whose box values get
    0 * log(red at (32,32) - 0.5) added: white frames give exactly the
    candidates, black frames NaN boxes with finite scores.
stateful_output.pt  scripted; input [1,1,4,4] gray, mean 0 std 1, raw. Keeps a
    [1,1] buffer, copies the frame's mean into it in place and returns the
    buffer itself (the output shares the module's storage).
lenet_nhwc_uint8.pt traced LeNet-5 shape (conv 6@5x5, avg pool, conv 16@5x5,
    avg pool, fc 120, 84, 10) taking NHWC [N,28,28,1] (permuted inside, as a
    model converted from Keras would) and returning uint8 [N,10] =
    round(255 * softmax). Weights are constructed, not trained: the convs
    copy shifted pixels so the 256 features are 2x2 means of the 12x12 pooled
    image at 16 offsets, fc1 scores the negative squared distance to the
    features of each seven-segment digit 0..9 (plus a constant keeping it
    positive through ReLU), fc2 and fc3 pass the ten scores on. No sidecar
    with the model's file name: lenet_nhwc_uint8.json says gray 28x28, mean 0
    std 1, input_layout nhwc, classification, labels "0".."9". The committed
    tests/data/digit_9.pgm (a thicker, shifted "9" than the template, white
    on black) must come out as 9; the generator checks it.
lenet_casts_input.pt the same LeNet, traced with forward() converting its
    input to float32 first (x.to(torch.float32)), as NNStreamer's LeNet-5
    test model does. Its bfloat16 copy then meets bf16 weights with a
    float32 input: the unfrozen copy raises, a frozen one crashed libtorch
    (issue 24). Same sidecar as lenet_nhwc_uint8; same outputs in fp32.
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


class PixelProbe(nn.Module):
    def forward(self, x):
        return x[:, :, :2, :2].permute(0, 2, 3, 1).contiguous()


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


class NanClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("weights", torch.tensor([-1.0, -2.0, -3.0, -4.0]))

    def forward(self, x):
        m = x.mean(dim=(1, 2, 3))
        return torch.log(m - 0.5).unsqueeze(1) * self.weights


NAN_DETECTOR_CANDIDATES = [
    [16, 16, 16, 16, 0.9, 1, 0, 0],
    [44, 40, 20, 16, 0.8, 0, 0, 1],
]


class NanDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("candidates", torch.tensor(NAN_DETECTOR_CANDIDATES))

    def forward(self, x):
        n = x.shape[0]
        poison = torch.log(x[:, 0, 32, 32] - 0.5).reshape(n, 1, 1) * 0.0
        c = self.candidates.unsqueeze(0).expand(n, 2, 8)
        return torch.cat([c[:, :, :4] + poison, c[:, :, 4:]], dim=2)


class StatefulOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("last", torch.zeros(1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last.copy_(x.mean().reshape(1, 1))
        return self.last


# Seven-segment digits: segments a (top), b (upper right), c (lower right),
# d (bottom), e (lower left), f (upper left), g (middle).
SEGMENTS = {0: "abcdef", 1: "bc", 2: "abdeg", 3: "abcdg", 4: "bcfg", 5: "acdfg",
            6: "acdefg", 7: "abc", 8: "abcdefg", 9: "abcdfg"}


def seven_segment(digit, stroke=2, dx=0, dy=0):
    """28x28 float image (0..1) of a white seven-segment digit on black."""
    img = torch.zeros(28, 28)
    x0, x1, y0, ym, y1 = 8 + dx, 20 + dx, 4 + dy, 14 + dy, 24 + dy
    boxes = {"a": (x0, y0, x1, y0 + stroke), "g": (x0, ym - stroke // 2, x1, ym - stroke // 2 + stroke),
             "d": (x0, y1 - stroke, x1, y1), "f": (x0, y0, x0 + stroke, ym),
             "b": (x1 - stroke, y0, x1, ym), "e": (x0, ym, x0 + stroke, y1),
             "c": (x1 - stroke, ym, x1, y1)}
    for seg in SEGMENTS[digit]:
        xa, ya, xb, yb = boxes[seg]
        img[ya:yb, xa:xb] = 1.0
    return img


class LeNetCastsInput(nn.Module):
    def __init__(self, lenet):
        super().__init__()
        self.lenet = lenet

    def forward(self, x):
        return self.lenet(x.to(torch.float32))


class LeNetNHWC(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.AvgPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(256, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)
        self.temperature = 1.0

    def features(self, x):  # NCHW
        x = self.pool(F.relu(self.conv1(x)))
        return torch.flatten(self.pool(F.relu(self.conv2(x))), 1)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        s = self.fc3(F.relu(self.fc2(F.relu(self.fc1(self.features(x))))))
        p = torch.softmax((s - s.amax(dim=1, keepdim=True)) * self.temperature, dim=1)
        return torch.round(p * 255.0).to(torch.uint8)


def build_lenet():
    m = LeNetNHWC()
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.conv1.weight[0, 0, 2, 2] = 1.0  # centre tap: conv1 ch 0 = the image, cropped
        for c in range(16):  # conv2 ch (dy,dx) = pooled image shifted by (dy,dx)
            m.conv2.weight[c, 0, c // 4, c % 4] = 1.0
        templates = torch.stack([m.features(seven_segment(d).reshape(1, 1, 28, 28))[0]
                                 for d in range(10)])
        norms = (templates ** 2).sum(dim=1)
        # s_k = 2<f, t_k> - |t_k|^2 = |f|^2 - |f - t_k|^2: the nearest template wins.
        m.fc1.weight[:10] = 2.0 * templates
        m.fc1.bias[:10] = norms.max() + 1.0 - norms
        for i in range(10):
            m.fc2.weight[i, i] = 1.0
            m.fc3.weight[i, i] = 1.0
        m.temperature = 2.0
    return m


def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(maxsplit=4)
    if parts[0] != b"P5":
        raise RuntimeError(f"{path}: not a binary PGM")
    w, h = int(parts[1]), int(parts[2])
    pixels = parts[4][:w * h]
    return torch.tensor(list(pixels), dtype=torch.float32).reshape(h, w)


def write_pgm(path, img):
    pixels = bytes(int(v) for v in (img.clamp(0, 1) * 255).round().flatten().tolist())
    with open(path, "wb") as f:
        f.write(b"P5\n28 28\n255\n" + pixels)


DIGIT_9_PGM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                           "digit_9.pgm")


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

    ts, _ = save(PixelProbe(), outdir, "pixel_probe", torch.rand(1, 3, 224, 224),
                 sidecar={"input_width": 224, "input_height": 224, **RAW_RGB})
    x = torch.rand(2, 3, 96, 64)
    out = ts(x.to(memory_format=cl))
    if out.shape != (2, 2, 2, 3) or not out.is_contiguous():
        raise RuntimeError("pixel_probe: wrong shape/layout")
    check_close(out, x[:, :, :2, :2].permute(0, 2, 3, 1), "pixel_probe")

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

    gray8 = {"input_width": 8, "input_height": 8, "channel_order": "gray", "mean": [0.0],
             "std": [1.0]}
    ts, _ = save(NanClassifier(), outdir, "nan_classifier", torch.rand(1, 1, 8, 8), sidecar={
        **gray8, "task": "classification", "labels": ["a", "b", "c", "d"], "top_k": 1})
    out = ts(torch.cat([torch.ones(1, 1, 8, 8), torch.zeros(1, 1, 8, 8)]))
    if not torch.isfinite(out[0]).all() or int(out[0].argmax()) != 3 or not out[1].isnan().all():
        raise RuntimeError("nan_classifier: white must be finite (label 3), black NaN")

    ts, _ = save(NanDetector(), outdir, "nan_detector", torch.rand(1, 3, 64, 64), sidecar={
        "input_width": 64, "input_height": 64, **RAW_RGB, "task": "detection",
        "decoder": "yolov5", "labels": ["bolt", "nut", "washer"]})
    out = ts(torch.cat([torch.ones(1, 3, 64, 64), torch.zeros(1, 3, 64, 64)]))
    check_close(out[0], torch.tensor(NAN_DETECTOR_CANDIDATES), "nan_detector white")
    if not out[1, :, :4].isnan().all() or not torch.isfinite(out[1, :, 4:]).all():
        raise RuntimeError("nan_detector: black must give NaN boxes and finite scores")

    ts, _ = save(StatefulOutput(), outdir, "stateful_output", script=True, sidecar={
        "input_width": 4, "input_height": 4, "channel_order": "gray", "mean": [0.0],
        "std": [1.0], "task": "raw"})
    a = ts(torch.full((1, 1, 4, 4), 0.25))
    b = ts(torch.full((1, 1, 4, 4), 0.75))
    if a.data_ptr() != b.data_ptr() or float(a) != 0.75:
        raise RuntimeError("stateful_output: the output must be the module's own buffer")

    torch.manual_seed(0)
    lenet = build_lenet()
    ts, _ = save(lenet, outdir, "lenet_nhwc_uint8", torch.rand(1, 28, 28, 1), sidecar={
        "input_width": 28, "input_height": 28, "channel_order": "gray", "mean": [0.0],
        "std": [1.0], "input_layout": "nhwc", "task": "classification",
        "labels": [str(d) for d in range(10)], "top_k": 3})
    for d in range(10):
        out = ts(seven_segment(d).reshape(1, 28, 28, 1))
        if out.dtype != torch.uint8 or int(out.argmax()) != d:
            raise RuntimeError(f"lenet_nhwc_uint8: template {d} classified as {int(out.argmax())}")
    out = ts((read_pgm(DIGIT_9_PGM) / 255.0).reshape(1, 28, 28, 1))
    if int(out.argmax()) != 9 or int(out[0, 9]) < 200:
        raise RuntimeError(f"lenet_nhwc_uint8: digit_9.pgm gives {out.tolist()}")
    save_lenet_casts_input(lenet, outdir)


def save_lenet_casts_input(lenet, outdir):
    name = "lenet_casts_input"
    with open(os.path.join(outdir, "lenet_nhwc_uint8.json")) as f:
        sidecar = json.load(f)
    ts, _ = save(LeNetCastsInput(lenet), outdir, name, torch.rand(1, 28, 28, 1), sidecar=sidecar)
    nine = (read_pgm(DIGIT_9_PGM) / 255.0).reshape(1, 28, 28, 1)
    if not torch.equal(ts(nine), lenet(nine)):
        raise RuntimeError(f"{name}: differs from lenet_nhwc_uint8 in fp32")
    if "aten::to" not in str(ts.graph):
        raise RuntimeError(f"{name}: the trace lost the input conversion")
    bf16 = torch.jit.load(os.path.join(outdir, name + ".pt")).eval().to(torch.bfloat16)
    try:
        bf16(nine.to(torch.bfloat16))
    except RuntimeError:
        return
    raise RuntimeError(f"{name}: its bfloat16 copy must fail on a bfloat16 input")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1])
    except Exception as e:  # meson only needs a non-zero status and a reason
        print(f"make_test_models.py: error: {e}", file=sys.stderr)
        sys.exit(1)
