#!/usr/bin/python3
"""Test models for the batching tests: a model slow enough (~0.25 s per call
on 2 cores) that flushes and state changes land in the middle of a forward().

Usage: make_batching_test_models.py OUTDIR
"""
import json
import os
import sys

import torch
from torch import nn


class SlowIdentity(nn.Module):
    """Returns its input; burns time on matrix products that depend on the
    input, so that freezing cannot fold them away."""

    def forward(self, x):
        busy = torch.ones(320, 320) * (x.mean() * 0.0 + 1.0)
        for _ in range(6):
            busy = torch.tanh(busy @ busy * 0.001)
        return x * 1.0 + busy.mean() * 0.0


def main(outdir):
    torch.set_num_threads(2)
    os.makedirs(outdir, exist_ok=True)
    ts = torch.jit.script(SlowIdentity().eval())
    path = os.path.join(outdir, "slow_identity.pt")
    ts.save(path)
    with open(os.path.join(outdir, "slow_identity.json"), "w") as f:
        json.dump({"input_width": 8, "input_height": 6, "channel_order": "rgb",
                   "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "task": "raw"}, f, indent=2)
        f.write("\n")
    x = torch.rand(2, 3, 6, 8)
    if not torch.equal(torch.jit.load(path)(x), x):
        raise RuntimeError("slow_identity: output differs from input")


if __name__ == "__main__":
    main(sys.argv[1])
