#!/usr/bin/python3
"""Test models for the error-domain tests: a model that loads and warms up
(on zeros) but whose forward() raises on a bright frame, so that a failure at
run time can be provoked on demand.

Usage: make_error_test_models.py OUTDIR
"""
import json
import os
import sys

import torch
from torch import nn


class FailsOnBright(nn.Module):
    """Returns the input's mean per channel; raises when any input value
    exceeds 0.5 (warm-up feeds zeros, a white frame gives 1.0)."""

    def forward(self, x):
        if bool(x.max() > 0.5):
            raise RuntimeError("frame too bright for this test model")
        return x.mean(dim=(2, 3))


def main(outdir):
    torch.set_num_threads(2)
    os.makedirs(outdir, exist_ok=True)
    ts = torch.jit.script(FailsOnBright().eval())
    path = os.path.join(outdir, "fails_on_bright.pt")
    ts.save(path)
    with open(os.path.join(outdir, "fails_on_bright.json"), "w") as f:
        json.dump({"input_width": 8, "input_height": 6, "channel_order": "rgb",
                   "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "task": "raw"}, f, indent=2)
        f.write("\n")
    m = torch.jit.load(path)
    if m(torch.zeros(2, 3, 6, 8)).shape != (2, 3):
        raise RuntimeError("fails_on_bright: wrong output shape")
    try:
        m(torch.ones(1, 3, 6, 8))
    except Exception:  # TorchScript raises its own error type
        return
    raise RuntimeError("fails_on_bright: a bright input did not raise")


if __name__ == "__main__":
    main(sys.argv[1])
