#!/usr/bin/python3
"""Quantize a model to int8 (FX static quantization, onednn) with an accuracy guard.

The float model comes as a Python nn.Module (FX cannot trace TorchScript):
  --torchvision ARCH                      torchvision architecture
  --module FILE.py:CLASS [--module-kwargs JSON]
with weights from --weights STATE_DICT.pth or --weights-from MODEL.pt (a
traced/scripted file with the same parameter names, e.g. the shipped fp32
model), or random weights (speed tests only).

Calibration and held-out frames are float32 NHWC files written by
torchinfer-dump-frames (FILE.raw + FILE.raw.json), i.e. preprocessed exactly
as the element does. --frames F splits F into calibration and held-out parts
(--heldout-fraction); --calib/--heldout give them separately. --random-frames N
uses N uniform random frames (speed benchmarks only: the guard figures then
say nothing about real accuracy and the sidecar says so).

The guard runs the fp32 and int8 models on the held-out frames and compares
them. --metric classification (default): top-1 agreement and the mean
absolute error of the outputs (--min-top1, --max-mae). --metric detection
(YOLOv5-layout output [N, A, 5+C], see detection_metrics.py): mAP@0.5 of
each model against --heldout-truth (JSON {"frames": [[[x0, y0, x1, y1,
class, ignore], ...] per held-out frame]}, boxes in model-input pixels, in
the frame order of the held-out file) must not drop by more than
--max-map-drop, and the mean absolute error of the score columns
(objectness and classes, 0..1) must stay within --max-mae. Outside the
tolerance it writes nothing and exits 2, unless --force: then it writes the
model with a loud warning and "forced": true in the sidecar, which the
element reports as a warning when it loads the model.

ReLU6 after a quantized convolution is folded into it (the conv then
saturates at 0 and 6 itself; MobileNetV2 int8 runs ~15 % faster); the
sidecar records how many, --no-fold-relu6 keeps them. A Linear after
global pooling (flatten of an [N, C, 1, 1] tensor) becomes a 1x1 quantized
convolution with the same weights (oneDNN's AVX2 int8 convolution is ~4x
faster than its int8 GEMM there); the sidecar records how many
(linear_as_conv1x1), --no-linear-as-conv keeps them.

--keep-float NAME (repeatable) leaves submodule NAME in float, e.g. a
detector's box decoding (exp, grid offsets), whose pixel coordinates would
lose precision in int8.

Output: OUT (traced TorchScript, not frozen: the engine freezes at load)
and OUT.json sidecar with "precision": "int8" and the guard figures.
"""
import argparse
import copy
import importlib.util
import json
import os
import sys

import numpy as np
import torch
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


def load_frames(path):
    with open(path + ".json") as f:
        hdr = json.load(f)
    if hdr.get("dtype") != "float32" or hdr.get("layout") != "NHWC":
        sys.exit(f"{path}: expected float32 NHWC frames, header says {hdr}")
    n, h, w, c = hdr["count"], hdr["height"], hdr["width"], hdr["channels"]
    data = np.fromfile(path, dtype=np.float32)
    if data.size != n * h * w * c:
        sys.exit(f"{path}: {data.size} floats, header promises {n}x{h}x{w}x{c}")
    x = torch.from_numpy(data.reshape(n, h, w, c)).permute(0, 3, 1, 2)
    return x.contiguous(memory_format=torch.channels_last)


def build_model(args):
    if args.torchvision:
        import torchvision
        model = getattr(torchvision.models, args.torchvision)()
    else:
        file, _, cls = args.module.partition(":")
        spec = importlib.util.spec_from_file_location("user_model", file)
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(file)))
        spec.loader.exec_module(mod)
        model = getattr(mod, cls)(**json.loads(args.module_kwargs))
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    elif args.weights_from:
        ts = torch.jit.load(args.weights_from, map_location="cpu")
        model.load_state_dict(ts.state_dict())
    return model.eval()


def _is_relu6(gm, node):
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), torch.nn.ReLU6)
    if node.op != "call_function":
        return False
    F = torch.nn.functional
    if node.target is F.relu6:
        return True
    if node.target in (F.hardtanh, F.hardtanh_):
        lo = node.kwargs.get("min_val", node.args[1] if len(node.args) > 1 else -1.0)
        hi = node.kwargs.get("max_val", node.args[2] if len(node.args) > 2 else 1.0)
        return lo == 0.0 and hi == 6.0
    return False


def fold_relu6(gm):
    """Removes each ReLU6 that follows a quantized convolution, which then
    saturates to [0, 6] itself: its output scale becomes 6/255, zero point 0.

    FX fuses conv+ReLU but not conv+ReLU6, and a separate quantized ReLU6 is
    an extra pass over every activation: 35 of them in MobileNetV2, 17 % of
    its int8 time here. The requantisation that ends every quantized conv
    clamps to 0..255 anyway, so with those parameters it computes exactly
    min(max(y, 0), 6) at a finer step than the conv's own range had.
    Returns the number of ReLU6 removed."""
    qconv = (torch.ao.nn.quantized.Conv1d, torch.ao.nn.quantized.Conv2d,
             torch.ao.nn.quantized.Conv3d)
    removed = 0
    for node in list(gm.graph.nodes):
        if not _is_relu6(gm, node) or not node.args:
            continue
        src = node.args[0]
        if (not isinstance(src, torch.fx.Node) or src.op != "call_module" or len(src.users) != 1
                or not isinstance(gm.get_submodule(src.target), qconv)):
            continue
        conv = gm.get_submodule(src.target)
        conv.scale, conv.zero_point = 6.0 / 255.0, 0
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        removed += 1
    if removed:
        gm.graph.lint()
        gm.recompile()
    return removed


_PASS_THROUGH = (torch.nn.Dropout, torch.ao.nn.quantized.Dropout, torch.nn.Identity)


def _flatten_input(gm, node):
    """x when node is flatten(x, 1) (function, method or nn.Flatten) over
    all remaining dims, else None."""
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        ok = isinstance(mod, torch.nn.Flatten) and mod.start_dim == 1 and mod.end_dim == -1
    elif node.op in ("call_function", "call_method"):
        ok = node.target in (torch.flatten, "flatten")
        start = node.kwargs.get("start_dim", node.args[1] if len(node.args) > 1 else 0)
        end = node.kwargs.get("end_dim", node.args[2] if len(node.args) > 2 else -1)
        ok = ok and start == 1 and end == -1
    else:
        return None
    return node.args[0] if ok and node.args and isinstance(node.args[0], torch.fx.Node) else None


def linear_to_conv1x1(gm, example):
    """Turns a quantized Linear fed by flatten(x) of an [N, C, 1, 1] x (a
    classifier after global pooling) into a 1x1 quantized convolution on x,
    flattened after it: same weights, bias, output scale and zero point,
    same values. FX leaves nn.Flatten in float (dequantize, Flatten,
    quantize before the Linear); the convolution then reads x itself, which
    also saves that pair and its rounding.

    Without VNNI, oneDNN runs the int8 Linear as a generic int8 GEMM
    (gemm:jit), the 1x1 convolution as its AVX2 int8 kernel: MobileNetV2's
    1280->1000 classifier takes 474 us as a Linear and 111 us as a
    convolution here (1 thread), 3-10 % of its int8 forward().
    Returns the number of Linear layers replaced."""
    from torch.fx.passes.shape_prop import ShapeProp
    import torch.nn.intrinsic.quantized as nniq  # not under torch.ao in 1.13
    nnq = torch.ao.nn.quantized
    try:
        ShapeProp(gm).propagate(example)
    except Exception as e:  # shapes unknown: leave every Linear alone
        print(f"note: no Linear turned into a convolution (shape propagation failed: {e})")
        return 0
    replaced = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_module":
            continue
        lin = gm.get_submodule(node.target)
        if type(lin) not in (nnq.Linear, nniq.LinearReLU):
            continue
        src = node.args[0]
        while (isinstance(src, torch.fx.Node) and src.op == "call_module"
               and isinstance(gm.get_submodule(src.target), _PASS_THROUGH)):
            src = src.args[0]
        x = _flatten_input(gm, src) if isinstance(src, torch.fx.Node) else None
        if (x is None and isinstance(src, torch.fx.Node) and src.op == "call_function"
                and src.target is torch.quantize_per_tensor):
            # nn.Flatten is no quantized op for FX: dequantize, Flatten, quantize.
            deq = _flatten_input(gm, src.args[0])
            if isinstance(deq, torch.fx.Node) and deq.op == "call_method" and deq.target == "dequantize":
                x = deq.args[0]
        meta = x.meta.get("tensor_meta") if x is not None else None
        if (meta is None or len(meta.shape) != 4 or tuple(meta.shape[2:]) != (1, 1)
                or meta.shape[1] != lin.in_features or not meta.is_quantized):
            continue
        conv = (nniq.ConvReLU2d if type(lin) is nniq.LinearReLU else nnq.Conv2d)(
            lin.in_features, lin.out_features, 1)
        w = lin.weight()
        conv.set_weight_bias(w.reshape(w.shape[0], w.shape[1], 1, 1), lin.bias())
        conv.scale, conv.zero_point = lin.scale, lin.zero_point
        name = node.target.replace(".", "_") + "_conv1x1"
        gm.add_submodule(name, conv)
        with gm.graph.inserting_after(node):
            conv_node = gm.graph.call_module(name, (x,))
        with gm.graph.inserting_after(conv_node):
            flat = gm.graph.call_function(torch.flatten, (conv_node, 1))
        node.replace_all_uses_with(flat)
        gm.graph.erase_node(node)
        replaced += 1
    if replaced:
        gm.graph.eliminate_dead_code()
        gm.delete_all_unused_submodules()
        gm.graph.lint()
        gm.recompile()
    return replaced


def batches(x, size):
    for i in range(0, x.shape[0], size):
        yield x[i:i + size]


def outputs(model, x, batch):
    with torch.no_grad():
        return torch.cat([model(b).float() for b in batches(x, batch)])


def detection_guard(model, quantized, held, truths, args):
    """mAP@0.5 of fp32 and int8 on the held-out frames, and the MAE of their
    score columns; returns the figures for the sidecar plus "ok"."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import detection_metrics as dm
    classes = outputs(model, held[:1], 1).shape[-1] - 5
    map_f, aps_f, _, ref = dm.model_map(model, held, truths, classes)
    map_q, aps_q, _, got = dm.model_map(quantized, held, truths, classes)
    mae = (ref[..., 4:] - got[..., 4:]).abs().mean().item()
    ok = map_f - map_q <= args.max_map_drop and mae <= args.max_mae
    print(f"accuracy guard on {held.shape[0]} held-out frames: mAP@0.5 fp32 {map_f:.4f}, "
          f"int8 {map_q:.4f} (drop {map_f - map_q:+.4f}, max {args.max_map_drop}); "
          f"score mean abs error {mae:.5f} (max {args.max_mae}) -> {'PASS' if ok else 'FAIL'}")
    fmt = lambda aps: [None if a is None else round(a, 4) for a in aps]  # noqa: E731
    print(f"  AP per class fp32 {fmt(aps_f)}\n  AP per class int8 {fmt(aps_q)}")
    return {"ok": ok, "map50_fp32": round(map_f, 5), "map50_int8": round(map_q, 5),
            "ap50_per_class_int8": fmt(aps_q), "score_mean_abs_error": round(mae, 6),
            "max_map_drop": args.max_map_drop, "max_mae": args.max_mae}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--torchvision", metavar="ARCH")
    src.add_argument("--module", metavar="FILE.py:CLASS")
    ap.add_argument("--module-kwargs", default="{}")
    w = ap.add_mutually_exclusive_group()
    w.add_argument("--weights", help="state_dict .pth")
    w.add_argument("--weights-from", help="TorchScript file to copy parameters from")
    ap.add_argument("--frames", help="dumped frames, split into calibration/held-out")
    ap.add_argument("--heldout-fraction", type=float, default=0.3)
    ap.add_argument("--calib", help="dumped calibration frames")
    ap.add_argument("--heldout", help="dumped held-out frames")
    ap.add_argument("--random-frames", type=int, help="N random frames (speed tests only)")
    ap.add_argument("--input", default="224x224", help="WxH for --random-frames")
    ap.add_argument("--min-top1", type=float, default=0.98,
                    help="minimum top-1 agreement with fp32 on held-out frames")
    ap.add_argument("--max-mae", type=float, default=0.1,
                    help="maximum mean absolute error of the outputs vs fp32")
    ap.add_argument("--metric", choices=["classification", "detection"], default="classification")
    ap.add_argument("--heldout-truth", help="detection: truth boxes of the held-out frames")
    ap.add_argument("--max-map-drop", type=float, default=0.02,
                    help="detection: largest allowed fp32 - int8 mAP@0.5 difference")
    ap.add_argument("--keep-float", action="append", default=[], metavar="NAME",
                    help="submodule to leave in float (repeatable)")
    ap.add_argument("--no-fold-relu6", action="store_true",
                    help="keep ReLU6 as separate ops (see fold_relu6)")
    ap.add_argument("--no-linear-as-conv", action="store_true",
                    help="keep a Linear after global pooling as a Linear (see linear_to_conv1x1)")
    ap.add_argument("--sidecar", help="fp32 sidecar to copy (default: <weights-from>.json)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true",
                    help="write the model even if the accuracy guard fails (flagged)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.backends.quantized.engine = "onednn"
    model = build_model(args)

    if args.random_frames:
        wd, ht = (int(v) for v in args.input.split("x"))
        x = torch.randn(args.random_frames, 3, ht, wd).contiguous(memory_format=torch.channels_last)
        calib_source = "random"
    elif args.frames:
        x = load_frames(args.frames)
        calib_source = os.path.basename(args.frames)
    else:
        x = None
    held_index = None  # which frames of the held-out source are held out, in order
    if x is not None:
        perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(args.seed))
        n_held = max(1, int(round(x.shape[0] * args.heldout_fraction)))
        held, calib = x[perm[:n_held]], x[perm[n_held:]]
        held_index = perm[:n_held].tolist()
    elif args.calib and args.heldout:
        calib, held = load_frames(args.calib), load_frames(args.heldout)
        calib_source = os.path.basename(args.calib)
    else:
        sys.exit("give --frames, --calib and --heldout, or --random-frames")
    if calib.shape[0] < 1:
        sys.exit("no calibration frames left after the held-out split")

    truths = None
    if args.metric == "detection":
        if not args.heldout_truth:
            sys.exit("--metric detection needs --heldout-truth")
        with open(args.heldout_truth) as f:
            truths = json.load(f)["frames"]
        if held_index is not None:
            truths = [truths[i] for i in held_index]
        if len(truths) != held.shape[0]:
            sys.exit(f"{args.heldout_truth}: {len(truths)} frames, {held.shape[0]} held out")

    example = calib[:1]
    qconfig = get_default_qconfig_mapping("onednn")
    for name in args.keep_float:
        qconfig.set_module_name(name, None)
    prepared = prepare_fx(copy.deepcopy(model), qconfig, example_inputs=(example,))
    with torch.no_grad():
        for b in batches(calib, 16):
            prepared(b)
    quantized = convert_fx(prepared).eval()
    folded = 0 if args.no_fold_relu6 else fold_relu6(quantized)
    if folded:
        print(f"folded {folded} ReLU6 into the quantized convolutions before them")
    as_conv = 0 if args.no_linear_as_conv else linear_to_conv1x1(quantized, example)
    if as_conv:
        print(f"turned {as_conv} Linear after global pooling into 1x1 convolutions")

    if args.metric == "detection":
        guard = detection_guard(model, quantized, held, truths, args)
        ok = guard.pop("ok")
    else:
        ref = outputs(model, held, 16)
        got = outputs(quantized, held, 16)
        mae = (ref - got).abs().mean().item()
        top1 = (ref.reshape(ref.shape[0], -1).argmax(1) ==
                got.reshape(got.shape[0], -1).argmax(1)).float().mean().item()
        ok = top1 >= args.min_top1 and mae <= args.max_mae
        print(f"accuracy guard on {held.shape[0]} held-out frames ({calib.shape[0]} calibration): "
              f"top-1 agreement {top1:.4f} (min {args.min_top1}), mean abs error {mae:.5f} "
              f"(max {args.max_mae}) -> {'PASS' if ok else 'FAIL'}")
        guard = {"top1_agreement": round(top1, 5), "mean_abs_error": round(mae, 6),
                 "min_top1": args.min_top1, "max_mae": args.max_mae}
    if not ok and not args.force:
        print("refusing to write an int8 model outside the tolerance; calibrate on more/other "
              "frames, loosen --min-top1/--max-mae, or --force", file=sys.stderr)
        sys.exit(2)
    if not ok:
        print("!" * 72 + "\nWARNING: writing an int8 model that FAILED the accuracy guard "
              "(--force); the sidecar is flagged\n" + "!" * 72, file=sys.stderr)

    with torch.no_grad():
        ts = torch.jit.trace(quantized, example)
    ts.save(args.out)
    back = torch.jit.load(args.out)
    with torch.no_grad():
        diff = (back(example).float() - quantized(example).float()).abs().max().item()
    if diff > 1e-5:
        sys.exit(f"saved model differs from the quantized one by {diff}")

    sidecar = {}
    side_in = args.sidecar or (os.path.splitext(args.weights_from)[0] + ".json"
                               if args.weights_from else None)
    if side_in and os.path.exists(side_in):
        with open(side_in) as f:
            sidecar = json.load(f)
        if isinstance(sidecar.get("labels"), str):  # keep it relative to the new sidecar
            sidecar["labels"] = os.path.relpath(
                os.path.join(os.path.dirname(os.path.abspath(side_in)), sidecar["labels"]),
                os.path.dirname(os.path.abspath(args.out)))
    else:
        sidecar["input_height"], sidecar["input_width"] = example.shape[2], example.shape[3]
    sidecar["precision"] = "int8"
    sidecar["quantization"] = {
        "backend": "onednn", "method": "fx-static", "calibration": calib_source,
        "calibration_frames": calib.shape[0], "heldout_frames": held.shape[0],
        "relu6_folded": folded, "linear_as_conv1x1": as_conv,
        **({"float_modules": args.keep_float} if args.keep_float else {}),
        **guard, "forced": not ok,
    }
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(sidecar, f, indent=2)
    print(f"wrote {args.out} and {os.path.splitext(args.out)[0]}.json")


if __name__ == "__main__":
    main()
