#!/usr/bin/python3
"""Test models for torchinfer's task "anomaly" (anomalib-style outputs).

Every model takes [N,3,16,16] rgb, mean 0, std 1 (so a pixel p arrives as
p/255), and works on channel 0 (red) only: its anomaly map is the 4x4 average
pooling of the red channel times 20 ([N,1,4,4], one cell per 4x4 input
pixels), so a uniform frame of red p gives every cell 20*p/255, and a red
square lights exactly the cells it covers.

anomaly_dict.pt   scripted; returns anomalib's dict {"anomaly_map": map,
                  "pred_score": [N] = mean of the red channel times 20}.
                  Sidecar: anomaly_dict.metadata.json, written the way
                  anomalib's export writes metadata.json (task, albumentations
                  transform, image/pixel thresholds, pred_scores.* and
                  anomaly_maps.* ranges): image_threshold 12, pixel_threshold
                  10, both ranges 0..20.
anomaly_map.pt    traced; returns the map alone. Sidecar anomaly_map.json:
                  task anomaly, image_threshold 12, min 0, max 20.
anomaly_tuple.pt  traced; returns (score [N,1] = mean red * 20, map).
                  Sidecar anomaly_tuple.json: image_threshold 12,
                  pixel_threshold 10, min 0, max 20.
anomaly_raw.json  a sidecar without thresholds for anomaly_map.pt (raw
                  values, decided by anomaly-threshold).
anomaly_one_cell.pt traced; the red channel pooled to one cell, [N,1,1,1]
                  (a 1x1 map); sidecar anomaly_one_cell.json as anomaly_map.json.
anomaly_all_nan.pt traced; NaN everywhere, whatever the input (a broken model);
                  sidecar anomaly_all_nan.json as anomaly_map.json.
anomaly_nan.pt    traced; the map, but NaN where the green channel is above
                  0.5 (a model that breaks on some inputs). Sidecar as
                  anomaly_map.json.

Usage: make_anomaly_test_models.py OUTDIR
"""
import json
import os
import sys
from typing import Dict

import torch
from torch import nn
import torch.nn.functional as F


def anomaly_map(x):
    return F.avg_pool2d(x[:, 0:1], 4) * 20.0


class DictOutputs(nn.Module):
    def forward(self, x) -> Dict[str, torch.Tensor]:
        return {"anomaly_map": anomaly_map(x), "pred_score": x[:, 0].mean(dim=(1, 2)) * 20.0}


class MapOnly(nn.Module):
    def forward(self, x):
        return anomaly_map(x)


class TupleOutputs(nn.Module):
    def forward(self, x):
        return x[:, 0].mean(dim=(1, 2)).unsqueeze(1) * 20.0, anomaly_map(x)


class NanWhereGreen(nn.Module):
    def forward(self, x):
        m = anomaly_map(x)
        green = F.avg_pool2d(x[:, 1:2], 4)
        return torch.where(green > 0.5, torch.full_like(m, float("nan")), m)


class OneCell(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(x[:, 0:1], 16) * 20.0


class AllNan(nn.Module):
    def forward(self, x):
        return anomaly_map(x) * float("nan")


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def check(name, got, want):
    if not torch.allclose(got, want):
        raise RuntimeError(f"{name}: {got} != {want}")


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    ours = {"input_width": 16, "input_height": 16, "channel_order": "rgb",
            "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "task": "anomaly"}
    x = torch.rand(2, 3, 16, 16)
    red = torch.zeros(1, 3, 16, 16)
    red[:, 0] = 0.6  # every cell and the score: 12

    path = os.path.join(outdir, "anomaly_dict.pt")
    torch.jit.script(DictOutputs().eval()).save(path)
    out = torch.jit.load(path)(red)
    check("anomaly_dict score", out["pred_score"], torch.tensor([12.0]))
    check("anomaly_dict map", out["anomaly_map"], torch.full((1, 1, 4, 4), 12.0))
    # anomalib's metadata.json (export.py get_metadata), as its json.dump writes it.
    write_json(os.path.join(outdir, "anomaly_dict.metadata.json"), {
        "task": "segmentation",
        "transform": {"__version__": "1.3.1", "transform": {
            "__class_fullname__": "Compose", "p": 1.0, "transforms": [
                {"__class_fullname__": "Resize", "always_apply": True, "p": 1, "height": 16,
                 "width": 16, "interpolation": 1},
                {"__class_fullname__": "Normalize", "always_apply": False, "p": 1.0,
                 "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "max_pixel_value": 255.0},
                {"__class_fullname__": "ToTensorV2", "always_apply": True, "p": 1.0,
                 "transpose_mask": False}],
            "bbox_params": None, "keypoint_params": None, "additional_targets": {},
            "is_check_shapes": True}},
        "image_threshold": 12.0, "pixel_threshold": 10.0,
        "pred_scores.min": 0.0, "pred_scores.max": 20.0,
        "anomaly_maps.min": 0.0, "anomaly_maps.max": 20.0,
    })

    path = os.path.join(outdir, "anomaly_map.pt")
    torch.jit.trace(MapOnly().eval(), x).save(path)
    check("anomaly_map", torch.jit.load(path)(red), torch.full((1, 1, 4, 4), 12.0))
    thresholds = {"image_threshold": 12.0, "min": 0.0, "max": 20.0}
    write_json(os.path.join(outdir, "anomaly_map.json"), dict(ours, **thresholds))
    write_json(os.path.join(outdir, "anomaly_raw.json"), ours)

    path = os.path.join(outdir, "anomaly_tuple.pt")
    torch.jit.trace(TupleOutputs().eval(), x).save(path)
    score, _ = torch.jit.load(path)(red)
    check("anomaly_tuple score", score, torch.tensor([[12.0]]))
    write_json(os.path.join(outdir, "anomaly_tuple.json"),
               dict(ours, pixel_threshold=10.0, **thresholds))

    path = os.path.join(outdir, "anomaly_nan.pt")
    torch.jit.trace(NanWhereGreen().eval(), x).save(path)
    green = torch.zeros(1, 3, 16, 16)
    green[:, 1] = 1.0
    if not torch.isnan(torch.jit.load(path)(green)).all():
        raise RuntimeError("anomaly_nan: a green input gives no NaN")
    write_json(os.path.join(outdir, "anomaly_nan.json"), dict(ours, **thresholds))

    path = os.path.join(outdir, "anomaly_one_cell.pt")
    torch.jit.trace(OneCell().eval(), x).save(path)
    check("anomaly_one_cell", torch.jit.load(path)(red), torch.full((1, 1, 1, 1), 12.0))
    write_json(os.path.join(outdir, "anomaly_one_cell.json"), dict(ours, **thresholds))

    path = os.path.join(outdir, "anomaly_all_nan.pt")
    torch.jit.trace(AllNan().eval(), x).save(path)
    if not torch.isnan(torch.jit.load(path)(red)).all():
        raise RuntimeError("anomaly_all_nan: a result without NaN")
    write_json(os.path.join(outdir, "anomaly_all_nan.json"), dict(ours, **thresholds))


if __name__ == "__main__":
    main(sys.argv[1])
