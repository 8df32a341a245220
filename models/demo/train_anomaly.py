#!/usr/bin/python3
"""Fit the demo anomaly model (PaDiM-style) on good part crops only (CPU).

About 5 min on the shared 2-core machine (rendering the crops is most of
it). Writes part_anomaly.pt (scripted TorchScript, returns a dict with
anomalib's names anomaly_map [N,1,96,96] and pred_score [N]) and
part_anomaly.json beside this script (or into --out-dir).

Crops: anomaly_crops.py, good parts at the line clip's station (never the
clip itself). Fitted on scenes 7,000,000.. (--train); thresholds and min/max
from held-out good scenes 7,500,000.. (--heldout). The backbone is the first
three blocks of the shipped defect classifier (defect_classifier.pt): it
gave clearly better figures than random fixed features (docs/anomaly.md).

Sidecar values (anomalib's metadata keys; anomalib sets its thresholds with
an F1-adaptive search that needs defective samples, which a good-only fit
does not have):
  image_threshold  the --quantile (0.99) quantile of the held-out good
                   crops' scores: about 1 good view in 100 is flagged
  pixel_threshold  the same value: the score is the map's maximum, so a
                   view is anomalous iff some pixel is, and the anomalous
                   regions are non-empty exactly on anomalous views
  min, max         the least and the greatest map value over the held-out
                   good crops (anomalib: the observed range on its
                   validation set)

Reproducible: rendering is seeded, the fit runs in float64 with 2 threads,
the channel subset comes from a seeded generator, and the script runs with
PYTHONHASHSEED=0 (TorchScript writes module constants in set order): a
rerun writes byte-identical files. Exit status 1 if the
saved model does not match the eager one, fails freeze +
optimize_for_inference, accepts another input size, or its file is over
--max-mb.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import anomaly_crops as ac  # noqa: E402
import defect_crops as dc  # noqa: E402
from defect_classifier_net import DefectNet  # noqa: E402
import part_anomaly_net as pan  # noqa: E402

TRAIN_SEED = 7_000_000
HELDOUT_SEED = 7_500_000
BACKBONE = os.path.join(HERE, "defect_classifier.pt")


def backbone_features(kind):
    """The shipped defect classifier's blocks, or the same blocks with fixed
    random weights (seeded PyTorch default init) for comparison."""
    torch.manual_seed(0)
    net = DefectNet()
    if kind == "defect-classifier":
        net.load_state_dict(torch.jit.load(BACKBONE).state_dict())
    return net.eval().features


def embed(model, crops, batch=128):
    with torch.no_grad():
        x = torch.from_numpy(crops).permute(0, 3, 1, 2)
        return torch.cat([model.embedding(dc.normalise(x[i:i + batch]))
                          for i in range(0, len(x), batch)])


def fit(emb, shapes, eps):
    """Per outline and grid position: mean [K, d, P], inverse covariance [K, P, d, d]."""
    means, invs = [], []
    for k in range(len(ac.SHAPES)):
        x = emb[torch.from_numpy(shapes == k)].double().flatten(2)      # [n, d, P]
        if len(x) < 2 * x.shape[1]:
            raise RuntimeError(f"{len(x)} training crops of {ac.SHAPES[k]}: too few for d={x.shape[1]}")
        mu = x.mean(0)
        delta = (x - mu).permute(2, 0, 1)                                 # [P, n, d]
        cov = delta.transpose(1, 2) @ delta / (len(x) - 1)
        invs.append(torch.linalg.inv(cov + eps * torch.eye(x.shape[1], dtype=torch.float64)))
        means.append(mu)
        print(f"  {ac.SHAPES[k]}: {len(x)} crops")
    return torch.stack(means), torch.stack(invs)


def run(model, crops, batch=64):
    """(maps [N,1,96,96], scores [N]) of float 0..255 crops [N,96,96,3]."""
    maps, scores = [], []
    x = torch.from_numpy(np.ascontiguousarray(crops, np.float32)).permute(0, 3, 1, 2)
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out = model(dc.normalise(x[i:i + batch]))
            maps.append(out["anomaly_map"])
            scores.append(out["pred_score"])
    return torch.cat(maps), torch.cat(scores)


def thresholds(maps, scores, quantile):
    thr = float(np.quantile(scores.double().numpy(), quantile))
    return {"image_threshold": round(thr, 4), "pixel_threshold": round(thr, 4),
            "min": round(float(maps.min()), 4), "max": round(float(maps.max()), 4)}


def check(model, path):
    """The saved file against the eager model, as loaded and optimised by torchinfer."""
    probe = dc.normalise(torch.randint(0, 256, (3, 3, pan.SIZE, pan.SIZE)))
    with torch.no_grad():
        ref = model(probe)
        loaded = torch.jit.load(path).eval()
        got = loaded(probe)
        optimised = torch.jit.optimize_for_inference(torch.jit.freeze(loaded))
        opt = optimised(probe)
    for name, out in (("reloaded", got), ("frozen+optimised", opt)):
        for key in ("anomaly_map", "pred_score"):
            diff = (out[key] - ref[key]).abs().max().item()
            if diff > 1e-3 * max(1.0, ref[key].abs().max().item()):
                raise RuntimeError(f"{name} model's {key} differs from eager ({diff})")
    if tuple(got["anomaly_map"].shape) != (3, 1, pan.SIZE, pan.SIZE) or tuple(got["pred_score"].shape) != (3,):
        raise RuntimeError("wrong output shapes")
    try:  # another size must raise, not reach the frozen graph (which crashes on it)
        optimised(torch.zeros(1, 3, 64, 64))
    except torch.jit.Error:
        pass
    else:
        raise RuntimeError("a 64x64 input was not refused")


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--train", type=int, default=900, help="good training scenes (~1.7 parts each)")
    ap.add_argument("--heldout", type=int, default=200, help="held-out good scenes")
    ap.add_argument("--dims", type=int, default=40, help="channels kept (of 144)")
    ap.add_argument("--eps", type=float, default=0.01,
                    help="covariance regularisation (random features are ~100x smaller: 1e-4)")
    ap.add_argument("--backbone", choices=["defect-classifier", "random"], default="defect-classifier")
    ap.add_argument("--quantile", type=float, default=0.99, help="of held-out good scores")
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--max-mb", type=float, default=5.0)
    ap.add_argument("--crops-cache", help="FILE.npz: reuse the rendered crops (written if absent)")
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.manual_seed(0)
    t0 = time.time()
    if args.crops_cache and os.path.exists(args.crops_cache):
        c = np.load(args.crops_cache)
        train, shapes, held = c["train"].astype(np.float32), c["shapes"], c["held"].astype(np.float32)
    else:
        train, _, _, shapes = ac.crop_set(TRAIN_SEED, args.train, ac.GOOD, args.workers)
        held, _, _, _ = ac.crop_set(HELDOUT_SEED, args.heldout, ac.GOOD, args.workers)
        if args.crops_cache:
            np.savez(args.crops_cache, train=train, shapes=shapes, held=held)
    print(f"rendered {len(train)} good training crops and {len(held)} held-out good crops "
          f"in {time.time() - t0:.0f}s", flush=True)

    features = backbone_features(args.backbone)
    channels = torch.randperm(144, generator=torch.Generator().manual_seed(0))[:args.dims].sort().values
    probe = pan.PartAnomaly(features, channels, torch.zeros(len(ac.SHAPES), args.dims, pan.GRID ** 2),
                            torch.zeros(len(ac.SHAPES), pan.GRID ** 2, args.dims, args.dims)).eval()
    means, invs = fit(embed(probe, train), shapes, args.eps)
    model = pan.PartAnomaly(features, channels, means, invs).eval()

    path = os.path.join(args.out_dir, "part_anomaly.pt")
    torch.jit.script(model).save(path)
    check(model, path)
    maps, scores = run(torch.jit.load(path).eval(), held)
    values = thresholds(maps, scores, args.quantile)
    sidecar = {"name": "QA-line part anomaly model (demo, PaDiM-style, fitted on good parts only)",
               "description": f"one padded part crop ({dc.PADDING} per side, area-resized, stretched) "
                              f"-> anomaly_map [N,1,96,96] and pred_score [N] (raw Mahalanobis "
                              f"distances); thresholds and min/max from {len(held)} held-out good "
                              f"crops; second stage after parts_detector",
               "input_width": pan.SIZE, "input_height": pan.SIZE, "channel_order": "rgb",
               "mean": dc.MEAN, "std": dc.STD, "task": "anomaly",
               "object_padding": dc.PADDING, "object_classes": dc.PART_CLASSES, **values}
    with open(os.path.join(args.out_dir, "part_anomaly.json"), "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    size = os.path.getsize(path) / 1e6
    print(f"wrote {path} ({size:.2f} MB) and part_anomaly.json in {time.time() - t0:.0f}s: "
          f"{json.dumps(values)}")
    print(f"held-out good scores: median {scores.median():.3f}, max {scores.max():.3f}; "
          f"flagged at the threshold: {int((scores >= values['image_threshold']).sum())}/{len(scores)}")
    if size > args.max_mb:
        print(f"error: {path} is {size:.2f} MB, over {args.max_mb}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
