#!/usr/bin/python3
"""Export a PyTorch model to TorchScript + sidecar JSON for the torchinfer plugin.

  export.py torchvision --arch resnet18 --weights resnet18.pth --out resnet18.pt
  export.py torchvision --arch mobilenet_v3_small --random-weights --out bench.pt
  export.py module --module my_net.py:MyNet --init-args '{"classes": 4}' \\
      --state-dict my_net.pth --input-size 128x96 --labels my.labels --out my.pt

Nothing is ever downloaded: weights come from local files only. The model is
saved as plain traced (or scripted) TorchScript, not frozen, because frozen /
optimize_for_inference files do not load in C++ libtorch 1.13; the plugin
freezes and optimises at load time. Exit status: 0 ok, 1 export/check failed,
2 bad arguments.
"""
import argparse
import importlib.util
import inspect
import json
import os
import re
import shutil
import sys
import warnings

import torch

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
TORCHVISION_HELPERS = {"get_model", "get_model_builder", "get_model_weights",
                       "get_weight", "list_models"}


class ExportError(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)[xX](\d+)", text)
    if not m or int(m.group(1)) == 0 or int(m.group(2)) == 0:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 224x224, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def torchvision_archs():
    import torchvision.models as tvm
    return sorted(n for n, v in vars(tvm).items()
                  if callable(v) and n.islower() and not n.startswith("_")
                  and not inspect.ismodule(v) and n not in TORCHVISION_HELPERS)


def load_state_dict(path):
    if not os.path.isfile(path):
        raise ExportError(f"weights file not found: {path}")
    sd = torch.load(path, map_location="cpu")
    # Training checkpoints often wrap the weights; DataParallel prefixes keys.
    for key in ("state_dict", "model_state_dict", "model"):
        if isinstance(sd, dict) and isinstance(sd.get(key), dict):
            sd = sd[key]
    if isinstance(sd, torch.nn.Module):
        sd = sd.state_dict()
    if not isinstance(sd, dict):
        raise ExportError(f"{path} does not contain a state_dict")
    return {(k[7:] if k.startswith("module.") else k): v for k, v in sd.items()}


def apply_state_dict(model, path):
    try:
        model.load_state_dict(load_state_dict(path))
    except RuntimeError as e:
        raise ExportError(f"weights in {path} do not match the model:\n{e}") from None


def flat_tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in flat_tensors(out[k])]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flat_tensors(o)]
    return []


def max_diff(a, b):
    ta, tb = flat_tensors(a), flat_tensors(b)
    if len(ta) != len(tb) or any(x.shape != y.shape for x, y in zip(ta, tb)):
        return float("inf")
    return max([(x.float() - y.float()).abs().max().item() for x, y in zip(ta, tb)] or [0.0])


def tolerance(ref):
    scale = max([t.abs().max().item() for t in flat_tensors(ref) if t.numel()] or [1.0])
    return 1e-4 * max(1.0, scale)


def convert(model, example, script):
    model.eval()
    with torch.no_grad():
        try:
            # strict=False lets dict outputs through the tracer
            ts = torch.jit.script(model) if script else torch.jit.trace(model, example, strict=False)
        except Exception as e:
            how = "scripting" if script else "tracing (try --script)"
            raise ExportError(f"{how} failed: {e}") from None
        ref = model(example)
        d = max_diff(ref, ts(example))
    print(f"traced vs eager max abs diff: {d:.3g}" if not script
          else f"scripted vs eager max abs diff: {d:.3g}")
    if d > tolerance(ref):
        raise ExportError("TorchScript output differs from the eager model")
    return ts


def verify_saved(path, model, example):
    """Reload as the plugin will: channels_last input, other batch size, frozen."""
    loaded = torch.jit.load(path, map_location="cpu").eval()
    batch = example.repeat(2, 1, 1, 1) * torch.linspace(0.5, 1.0, 2).view(2, 1, 1, 1)
    batch = batch.contiguous(memory_format=torch.channels_last)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's channels_last resize notices
        ref = model(batch)
        d = max_diff(ref, loaded(batch))
        print(f"reloaded (batch 2, channels_last) vs eager max abs diff: {d:.3g}")
        if d > tolerance(ref):
            raise ExportError("reloaded model output differs (batch size baked in by tracing?)")
        try:
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(loaded))
            print(f"frozen+optimized vs eager max abs diff: {max_diff(ref, frozen(batch)):.3g}")
        except Exception as e:
            print(f"WARNING: freezing failed, the plugin may not optimise this model: {e}",
                  file=sys.stderr)


def check_classification(out, labels):
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        print(f"WARNING: task classification expects a [N, classes] tensor, model gives {shape}",
              file=sys.stderr)
        return
    if labels is not None and len(labels) != out.shape[1]:
        raise ExportError(f"labels file has {len(labels)} labels but the model has "
                          f"{out.shape[1]} outputs")


def read_labels(path):
    if path is None:
        return None
    if not os.path.isfile(path):
        raise ExportError(f"labels file not found: {path}")
    with open(path) as f:
        labels = [line.rstrip("\r\n") for line in f]
    while labels and not labels[-1]:  # counted as torchinfer counts them
        labels.pop()
    if not labels:
        raise ExportError(f"labels file is empty: {path}")
    return labels


def write_outputs(ts, out, sidecar, labels_path):
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(out)[0]
    ts.save(out)
    if labels_path is not None:
        dest = stem + ".labels"
        if os.path.abspath(labels_path) != os.path.abspath(dest):
            shutil.copyfile(labels_path, dest)
        sidecar["labels"] = os.path.basename(dest)
    with open(stem + ".json", "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    print(f"wrote {out} and {stem}.json")


def normalisation(args, channels):
    if args.scale is not None:
        if args.mean is not None or args.std is not None:
            raise ExportError("use either --mean/--std or --scale/--offset, not both")
        offset = args.offset if args.offset is not None else [0.0] * channels
        if len(offset) != channels:
            raise ExportError(f"--offset needs {channels} values")
        return {"scale": args.scale, "offset": offset}
    if args.offset is not None:
        raise ExportError("--offset needs --scale")
    mean, std = args.mean, args.std
    if mean is None and std is None:
        mean, std = ([0.0] * channels, [1.0] * channels) if args.mode == "module" \
            else (IMAGENET_MEAN, IMAGENET_STD)
    if mean is None or std is None:
        raise ExportError("give both --mean and --std")
    if len(mean) != channels or len(std) != channels:
        raise ExportError(f"--mean and --std need {channels} values each")
    if any(s <= 0 for s in std):
        raise ExportError("--std values must be positive")
    return {"mean": mean, "std": std}


def common_sidecar(args, width, height, order, channels):
    side = {"input_width": width, "input_height": height, "channel_order": order}
    side.update(normalisation(args, channels))
    side["task"] = args.task
    if args.mode == "torchvision":
        side.update(top_k=5, output_activation="softmax")  # ImageNet heads emit logits
    if args.top_k is not None:
        side["top_k"] = args.top_k
    if args.output_activation is not None:
        side["output_activation"] = args.output_activation
    return side


def export_torchvision(args):
    import torchvision.models as tvm
    archs = torchvision_archs()
    if args.arch not in archs:
        raise ExportError(f"unknown torchvision classification arch {args.arch!r}; "
                          f"choose from: {', '.join(archs)}")
    if args.random_weights:
        bar = "!" * 72
        print(f"{bar}\nWARNING: --random-weights: the model is untrained, its outputs are\n"
              f"MEANINGLESS. Use this file for benchmarking only.\n{bar}", file=sys.stderr)
    builder = vars(tvm)[args.arch]
    kwargs = {"weights": None} if "weights" in inspect.signature(builder).parameters \
        else {"pretrained": False}
    if args.num_classes is not None:
        kwargs["num_classes"] = args.num_classes
    if args.arch in ("inception_v3", "googlenet"):
        kwargs["init_weights"] = False  # its slow truncated-normal init adds nothing here
    torch.manual_seed(0)
    model = builder(**kwargs)
    if args.weights:
        apply_state_dict(model, args.weights)
    width, height = args.input_size or ((299, 299) if args.arch == "inception_v3" else (224, 224))
    return model, width, height, 3, "rgb"


def load_user_class(spec):
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise ExportError(f"--module must be path/to/file.py:ClassName, got {spec!r}")
    if not os.path.isfile(path):
        raise ExportError(f"module file not found: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # allow sibling imports
    mod_spec = importlib.util.spec_from_file_location("user_model", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    cls = getattr(mod, name, None)
    if cls is None:
        raise ExportError(f"{path} has no attribute {name!r}")
    return cls


def export_module(args):
    cls = load_user_class(args.module)
    try:
        init = json.loads(args.init_args) if args.init_args else {}
    except ValueError as e:
        raise ExportError(f"--init-args is not valid JSON: {e}") from None
    try:
        model = cls(*init) if isinstance(init, list) else cls(**init)
    except TypeError as e:
        raise ExportError(f"cannot construct {cls.__name__} with --init-args: {e}") from None
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"{args.module} is not a torch.nn.Module")
    if args.state_dict:
        apply_state_dict(model, args.state_dict)
    order = args.channel_order or ("gray" if args.channels == 1 else "rgb")
    if (order == "gray") != (args.channels == 1):
        raise ExportError(f"--channel-order {order} does not fit --channels {args.channels}")
    return model, args.input_size[0], args.input_size[1], args.channels, order


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n")[1])
    sub = p.add_subparsers(dest="mode", required=True)

    def common(sp):
        sp.add_argument("--out", required=True, help="output .pt; sidecar goes to OUT.json")
        sp.add_argument("--labels", help="labels file, one per line; copied to OUT.labels")
        sp.add_argument("--mean", type=float, nargs="+", help="per channel, 0..1 units")
        sp.add_argument("--std", type=float, nargs="+", help="per channel, 0..1 units")
        sp.add_argument("--scale", type=float, help="alternative to mean/std: x*scale+offset")
        sp.add_argument("--offset", type=float, nargs="+")
        sp.add_argument("--task", choices=["classification", "detection", "raw"],
                        default="classification")
        sp.add_argument("--top-k", type=int)
        sp.add_argument("--output-activation", choices=["softmax", "sigmoid", "none"])
        sp.add_argument("--script", action="store_true",
                        help="torch.jit.script instead of trace (for data-dependent control flow)")

    tv = sub.add_parser("torchvision", help="a torchvision classification architecture")
    tv.add_argument("--arch", required=True, help="e.g. resnet18, mobilenet_v3_small")
    w = tv.add_mutually_exclusive_group(required=True)
    w.add_argument("--weights", help="local state_dict .pth file")
    w.add_argument("--random-weights", action="store_true",
                   help="untrained weights, for benchmarking only")
    tv.add_argument("--num-classes", type=int, help="if the weights were fine-tuned")
    tv.add_argument("--input-size", type=parse_size, help="WxH (default 224x224, 299 for inception_v3)")
    common(tv)

    mo = sub.add_parser("module", help="your own nn.Module class")
    mo.add_argument("--module", required=True, help="path/to/file.py:ClassName")
    mo.add_argument("--init-args", help="JSON list (positional) or object (keyword)")
    mo.add_argument("--state-dict", help="local state_dict .pth file")
    mo.add_argument("--input-size", type=parse_size, required=True, help="WxH")
    mo.add_argument("--channels", type=int, choices=[1, 3], default=3)
    mo.add_argument("--channel-order", choices=["rgb", "bgr", "gray"])
    common(mo)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    try:
        if args.top_k is not None and args.top_k < 1:
            raise ExportError("--top-k must be at least 1")
        labels = read_labels(args.labels)
        builder = export_torchvision if args.mode == "torchvision" else export_module
        model, width, height, channels, order = builder(args)
        sidecar = common_sidecar(args, width, height, order, channels)
        torch.manual_seed(0)
        example = torch.randn(1, channels, height, width)
        model.eval()
        with torch.no_grad():
            try:
                eager_out = model(example)
            except Exception as e:
                raise ExportError(f"model fails on a [1, {channels}, {height}, {width}] "
                                  f"input (check --input-size/--channels): {e}") from None
        if args.task == "classification":
            check_classification(eager_out, labels)
    except ExportError as e:
        parser.error(str(e))  # exits with status 2
    try:
        ts = convert(model, example, args.script)
        write_outputs(ts, args.out, sidecar, args.labels)
        try:
            verify_saved(args.out, model, example)
        except ExportError:
            os.remove(args.out)  # a model that fails verification must not be picked up
            raise
    except ExportError as e:
        print(f"export.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
