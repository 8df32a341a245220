#!/usr/bin/python3
"""Files that look like models but are not usable TorchScript, for the
negative tests of the model load path (tests/unit/test_hostile_models.cpp):
what users really hand over (torch.save() pickles, a model saved after
optimize_for_inference) and archives damaged in ways libtorch itself reports
with an internal assert. Also a valid model whose entries are deflated, so
the zip check's inflate path is tested on a file libtorch loads.

Usage: make_hostile_test_models.py OUTDIR
"""
import io
import os
import sys
import zipfile

import torch
from torch import nn


class HostileNet(nn.Module):
    """Small conv+bn+linear classifier (3x16x16 in, 4 classes out)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3)))


def rewrite(src, dst, compression=zipfile.ZIP_STORED, drop=None, change=None):
    """Copies zip `src` to `dst` entry by entry (CRCs recomputed): entries
    whose name ends with `drop` are left out, `change(name, data)` may
    alter an entry's bytes."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression) as zout:
        for info in zin.infolist():
            if drop and info.filename.endswith(drop):
                continue
            data = zin.read(info.filename)
            if change:
                data = change(info.filename, data)
            zout.writestr(info.filename, data, compress_type=compression)


def main(outdir):
    torch.manual_seed(0)
    os.makedirs(outdir, exist_ok=True)
    out = lambda name: os.path.join(outdir, name)
    net = HostileNet().eval()

    torch.save(net.state_dict(), out("state_dict.pt"))
    torch.save(net, out("pickled_module.pt"))
    torch.save(net.state_dict(), out("legacy_pickle.pt"), _use_new_zipfile_serialization=False)

    scripted = torch.jit.script(net)
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    with open(out("hostile_net.pt"), "wb") as f:
        f.write(buf.getvalue())

    torch.jit.save(torch.jit.optimize_for_inference(torch.jit.script(net)),
                   out("optimized_in_python.pt"))

    rewrite(out("hostile_net.pt"), out("no_version.pt"), drop="/version")

    # A changed letter in the compiled code, with a valid CRC: what a
    # hand-edited or badly merged file looks like to libtorch.
    def break_code(name, data):
        if "/code/" in name and name.endswith(".py"):
            return data.replace(b"def forward", b"def forwarf", 1).replace(b"torch.", b"torcx.", 1)
        return data

    rewrite(out("hostile_net.pt"), out("code_edited.pt"), change=break_code)
    rewrite(out("hostile_net.pt"), out("deflated.pt"), compression=zipfile.ZIP_DEFLATED)

    x = torch.rand(1, 3, 16, 16)
    if not torch.allclose(torch.jit.load(out("deflated.pt"))(x), net(x)):
        raise RuntimeError("deflated.pt: output differs from the module")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
