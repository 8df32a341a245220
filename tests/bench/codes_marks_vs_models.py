#!/usr/bin/python3
"""How the shipped demo models take a DataMatrix marked on a good part,
against how well zxing-cpp reads it: for one part of the line clip
(default 0, a good bracket) rendered alone on the belt on every STEP-th
frame it is whole (as in the clip: motion and focus blur, noise, JPEG
quality 60), each mark given as STYLE:DEPTH:MODULE[:DU] (dark or balanced;
how much a module darkens, or for balanced also lightens, the metal;
module px; moved DU px along the part from where part_codes.py puts it):
  views read by zxing-cpp (python3-zxing-cpp, the part box + 10 %),
  the detector's best defect score on the part (Python reference of the
  plugin's preprocessing, NMS at 0.45; the QA app keeps boxes >= 0.5),
  the defect classifier's mean and lowest "ok" probability on its crop.

  tests/bench/codes_marks_vs_models.py [--part 0] [--step 5] none dark:0.6:3 balanced:0.15:3
"""
import argparse
import io
import json
import os
import sys

import numpy as np
import torch
import zxingcpp
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "models", "demo")
sys.path.insert(0, DEMO)
sys.path.insert(0, os.path.join(ROOT, "models"))
import defect_crops as dc  # noqa: E402
import detection_metrics as dm  # noqa: E402
import eval_defect_classifier as edc  # noqa: E402
import eval_detector as ed  # noqa: E402
import make_detection_clip as mdc  # noqa: E402
import make_frames as mf  # noqa: E402
import part_codes  # noqa: E402


def views(parts, index, code, step):
    """(frame RGB after JPEG, part box) of each STEP-th frame it is whole."""
    p = parts[index]
    for t in range(0, mdc.FRAMES, step):
        s = mdc.frame_scene(parts, t)
        s.parts = [q for q in s.parts if abs(q.cx - (p.cx + mdc.SPEED * t)) < 1e-6]
        s.parts[0].code = code
        box = mf.part_bbox(s.parts[0])
        if box[0] < 2 or box[2] > mf.WIDTH - 2:
            continue
        buf = io.BytesIO()
        Image.fromarray(mf.render(s)[0]).save(buf, "JPEG", quality=60)
        yield np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB")), box


def measure(parts, index, code, step, det, meta, cls, labels):
    n = read = 0
    dets, oks = [], []
    for rgb, (x0, y0, x1, y1) in views(parts, index, code, step):
        n += 1
        w, h = x1 - x0, y1 - y0
        grey = np.asarray(Image.fromarray(rgb).convert("L"))
        crop = grey[int(max(0, y0 - .1 * h)):int(min(mf.HEIGHT, y1 + .1 * h)),
                    int(max(0, x0 - .1 * w)):int(min(mf.WIDTH, x1 + .1 * w))]
        if code is not None:
            got = zxingcpp.read_barcodes(np.ascontiguousarray(crop),
                                         formats=zxingcpp.BarcodeFormat.DataMatrix)
            read += any(r.text == code["text"] for r in got)
        with torch.no_grad():
            out = det(ed.preprocess(np.ascontiguousarray(rgb), meta))[0]
        sx, sy = mf.WIDTH / meta["input_width"], mf.HEIGHT / meta["input_height"]
        best = 0.0
        for bx0, by0, bx1, by1, score, c in dm.decode(out, 0.1, 0.45, 100):
            cx, cy = (bx0 + bx1) / 2 * sx, (by0 + by1) / 2 * sy
            if c >= 2 and x0 <= cx <= x1 and y0 <= cy <= y1:
                best = max(best, float(score))
        dets.append(best)
        prob = edc.probabilities(cls, dc.crop(rgb, [x0, y0, x1, y1])[None])[0]
        oks.append(float(prob[labels.index("ok")]))
    return n, read, max(dets), float(np.mean(oks)), min(oks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", type=int, default=0)
    ap.add_argument("--step", type=int, default=5)
    ap.add_argument("marks", nargs="+", help="none, or STYLE:DEPTH:MODULE[:DU]")
    args = ap.parse_args()
    torch.set_num_threads(1)
    det = torch.jit.load(os.path.join(DEMO, "parts_detector.pt")).eval()
    meta = json.load(open(os.path.join(DEMO, "parts_detector.json")))
    cls = edc.load(os.path.join(DEMO, "defect_classifier.pt"))
    labels = open(os.path.join(DEMO, "defect_classifier.labels")).read().split()
    parts = mdc.make_parts()
    part_codes.mark(parts, mf._part_sdf)
    for spec in args.marks:
        code = None
        if spec != "none":
            style, depth, module, *du = spec.split(":")
            code = dict(parts[args.part].code, style=style, depth=float(depth),
                        module=float(module))
            code["u"] += float(du[0]) if du else 0.0
        n, read, best, ok_mean, ok_min = measure(parts, args.part, code, args.step, det, meta,
                                                 cls, labels)
        print(f"part {args.part} mark {spec:20s} read {read}/{n}  detector defect max {best:.2f}  "
              f"classifier ok mean {ok_mean:.2f} min {ok_min:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
