#!/usr/bin/python3
"""Check the demo defect classifier; write its int8 calibration frames.

  eval_defect_classifier.py clip [--model models/demo/defect_classifier.pt ...]
      per-part verdicts on the decoded line.mkv: for every part of
      line.truth.json that is seen whole, the truth box on each frame from
      first_full to last_full is cropped as torchinfer crops a detection
      (object-padding 0.1, area resize, see defect_crops.py) and classified;
      the softmax is averaged over those frames and the part is rejected if
      the top class is not "ok". Compared with the truth's "defective".
      Exit status 1 if any judged part is wrong. With --detector
      models/demo/parts_detector.pt the crops are cut from that detector's
      part boxes instead (score >= 0.5, NMS 0.45, the box with the highest
      IoU >= 0.5 with the truth box; a frame without one is left out), as
      the two-stage demo cuts them.
  eval_defect_classifier.py frames FILE.raw --seed S --count N
      crops of scenes S..S+N-1 preprocessed as the element does, in
      torchinfer-dump-frames' format (FILE.raw float32 NHWC + FILE.raw.json),
      for quantize.py --calib/--heldout
  eval_defect_classifier.py heldout [--model M.pt ...] [--seed S] [--count N]
      accuracy per class on held-out scenes (default: those train uses)
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import defect_crops as dc  # noqa: E402
import make_clip  # noqa: E402
import make_detection_data as md  # noqa: E402

HELDOUT_SEED = 6_000_000
CALIB_SEED = 5_500_000
DEFAULT_MODEL = os.path.join(HERE, "defect_classifier.pt")


def load(model_path):
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"  # int8 models; no fbgemm in Debian's torch
    return torch.jit.load(model_path).eval()


def probabilities(model, crops):
    """crops: [N, H, W, 3] float 0..255 -> [N, classes] softmax."""
    x = torch.from_numpy(np.ascontiguousarray(crops, np.float32)).permute(0, 3, 1, 2)
    with torch.no_grad():
        return torch.cat([torch.softmax(model(dc.normalise(x[i:i + 128])).float(), 1)
                          for i in range(0, len(x), 128)])


def detector_part_boxes(detector_path, decoded):
    """Per frame, the detector's part boxes (score >= 0.5) in frame pixels."""
    import detection_metrics as dm
    import eval_detector as ed
    with open(os.path.splitext(detector_path)[0] + ".json") as f:
        meta = json.load(f)
    det = torch.jit.optimize_for_inference(torch.jit.freeze(load(detector_path)))
    sx, sy = decoded.shape[2] / meta["input_width"], decoded.shape[1] / meta["input_height"]
    boxes = []
    with torch.no_grad():
        for img in decoded:
            out = det(ed.preprocess(np.ascontiguousarray(img), meta))[0]
            boxes.append([ed.clip_box(x0 * sx, y0 * sy, x1 * sx, y1 * sy)
                          for x0, y0, x1, y1, s, c in dm.decode(out, 0.5, 0.45, 100)
                          if md.CLASSES[c] in md.PART_CLASSES])
    return boxes


def _iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)


def clip_verdicts(model_path, decoded=None, truth_path=None, det_boxes=None):
    """Per-part verdicts on the decoded clip; returns (right, judged).
    det_boxes (detector_part_boxes): crop those instead of the truth boxes."""
    truth_path = truth_path or os.path.join(HERE, "line.truth.json")
    with open(truth_path) as f:
        truth = json.load(f)
    if decoded is None:
        decoded = make_clip.decode(os.path.join(os.path.dirname(truth_path), truth["video"]))
    model = load(model_path)
    right, judged, frames_right, frames, lost = 0, 0, 0, 0, 0
    print(f"{os.path.basename(model_path)} on the decoded clip "
          f"({'detector' if det_boxes else 'truth'} boxes, padding "
          f"{dc.PADDING}, mean softmax over the frames a part is whole):")
    for p in truth["parts"]:
        if p["first_full"] is None:
            continue
        crops = []
        for t in range(p["first_full"], p["last_full"] + 1):
            box = next(o["bbox"] for o in truth["frames"][t]["objects"]
                       if o["part"] == p["id"] and o["class"] in md.PART_CLASSES)
            if det_boxes is not None:
                best = max(det_boxes[t], key=lambda b: _iou(b, box), default=None)
                if best is None or _iou(best, box) < 0.5:
                    lost += 1
                    continue
                box = best
            crops.append(dc.crop(decoded[t], box))
        if not crops:
            judged += 1
            print(f"  part {p['id']:2d} {p['kind']:12s} never detected while whole  WRONG")
            continue
        prob = probabilities(model, np.stack(crops))
        want = p["defects"][0] if p["defects"] else "ok"
        per_frame = prob.argmax(1).tolist()
        frames_right += sum(dc.LABELS[c] == want for c in per_frame)
        frames += len(per_frame)
        mean = prob.mean(0)
        top = dc.LABELS[int(mean.argmax())]
        reject = top != "ok"
        judged += 1
        right += reject == p["defective"]
        print(f"  part {p['id']:2d} {p['kind']:12s} truth {want:12s} predicted {top:12s} "
              f"(p={mean.max():.3f}, {len(crops)} frames) -> {'reject' if reject else 'pass'}"
              f"{'' if reject == p['defective'] else '  WRONG'}")
    print(f"  verdicts {right}/{judged} parts right; defect class per frame "
          f"{frames_right}/{frames} ({frames_right / max(frames, 1):.3f})"
          + (f"; {lost} part-frames without a detection" if det_boxes is not None else ""))
    return right, judged


def heldout_set(seed, count):
    samples = [s for k in range(seed, seed + count) for s in dc.scene_samples(k)]
    return np.stack([s[0] for s in samples]), np.array([s[1] for s in samples]), \
        [s[2] for s in samples]


def report_heldout(model_path, crops, labels):
    pred = probabilities(load(model_path), crops).argmax(1).numpy()
    acc = float((pred == labels).mean())
    per = "  ".join(f"{name} {float((pred[labels == i] == i).mean()):.3f} ({int((labels == i).sum())})"
                    for i, name in enumerate(dc.LABELS))
    print(f"{os.path.basename(model_path)} held-out accuracy {acc:.4f} on {len(labels)} crops; "
          f"per class: {per}")
    return acc


def write_frames(out, seed, count):
    crops, _, _ = heldout_set(seed, count)
    x = dc.normalise(torch.from_numpy(crops).permute(0, 3, 1, 2))
    with open(out, "wb") as f:
        f.write(x.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32).tobytes())
    hdr = {"dtype": "float32", "layout": "NHWC", "count": len(crops), "height": dc.SIZE,
           "width": dc.SIZE, "channels": 3,
           "clip": f"defect_crops scenes {seed}..{seed + count - 1}", "every": 1,
           "model_config": "defect_classifier.json"}
    with open(out + ".json", "w") as f:
        json.dump(hdr, f, indent=2)
    print(f"wrote {len(crops)} preprocessed crops to {out} (+ .json)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("clip")
    c.add_argument("--model", action="append")
    c.add_argument("--truth", default=os.path.join(HERE, "line.truth.json"))
    c.add_argument("--detector", help="crop this detector's part boxes instead of the truth's")
    f = sub.add_parser("frames")
    f.add_argument("out")
    f.add_argument("--seed", type=int, default=CALIB_SEED)
    f.add_argument("--count", type=int, default=120, help="scenes (about 2.4 crops each)")
    h = sub.add_parser("heldout")
    h.add_argument("--model", action="append")
    h.add_argument("--seed", type=int, default=HELDOUT_SEED)
    h.add_argument("--count", type=int, default=300)
    args = ap.parse_args()
    if args.cmd == "frames":
        write_frames(args.out, args.seed, args.count)
        return 0
    models = args.model or [DEFAULT_MODEL]
    if args.cmd == "heldout":
        crops, labels, _ = heldout_set(args.seed, args.count)
        for m in models:
            report_heldout(m, crops, labels)
        return 0
    with open(args.truth) as fh:
        video = json.load(fh)["video"]
    decoded = make_clip.decode(os.path.join(os.path.dirname(os.path.abspath(args.truth)), video))
    det_boxes = detector_part_boxes(args.detector, decoded) if args.detector else None
    status = 0
    for m in models:
        right, judged = clip_verdicts(m, decoded, args.truth, det_boxes)
        status |= right != judged
    return status


if __name__ == "__main__":
    sys.exit(main())
