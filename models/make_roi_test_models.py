#!/usr/bin/python3
"""Test models for torchinfer's inference-region=roi-list tests.

roi_identity.pt       traced x * 1.0. Input [N,3,12,16] (w 16, h 12), rgb,
                      mean 0, std 1, raw: the output is exactly what the
                      model saw, so a region's crop can be compared bit for
                      bit with the full-frame result on the cropped frame.
channel_classifier.pt traced; input [N,3,8,8] rgb, mean 0 std 1,
                      classification, softmax, labels red/green/blue: the
                      scores are 20 x each channel's mean, so the label is
                      the dominant colour of the region.

Usage: make_roi_test_models.py OUTDIR
"""
import json
import os
import sys

import torch
from torch import nn


class Identity(nn.Module):
    def forward(self, x):
        return x * 1.0


class ChannelClassifier(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3)) * 20.0


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    plain = {"channel_order": "rgb", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0]}

    x = torch.rand(2, 3, 12, 16)
    path = os.path.join(outdir, "roi_identity.pt")
    torch.jit.trace(Identity().eval(), x).save(path)
    write_json(os.path.join(outdir, "roi_identity.json"),
               dict(plain, input_width=16, input_height=12, task="raw"))
    if not torch.equal(torch.jit.load(path)(x), x):
        raise RuntimeError("roi_identity: output differs from input")

    x = torch.rand(2, 3, 8, 8)
    path = os.path.join(outdir, "channel_classifier.pt")
    torch.jit.trace(ChannelClassifier().eval(), x).save(path)
    write_json(os.path.join(outdir, "channel_classifier.json"),
               dict(plain, input_width=8, input_height=8, task="classification",
                    output_activation="softmax", top_k=3, labels=["red", "green", "blue"]))
    red = torch.zeros(1, 3, 8, 8)
    red[:, 0] = 1.0
    if int(torch.jit.load(path)(red).argmax()) != 0:
        raise RuntimeError("channel_classifier: a red input is not class 0")


if __name__ == "__main__":
    main(sys.argv[1])
