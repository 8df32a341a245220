#!/usr/bin/python3
"""Figures of the demo anomaly model (Python reference of the plugin's).

  eval_anomaly.py clip [--model models/demo/part_anomaly.pt] [--views FILE.json]
      every view of every part of line.truth.json that is seen whole: the
      truth part box on each frame from first_full to last_full, cropped as
      torchinfer crops a detection (object-padding 0.1, area resize in
      float, defect_crops.py) from the decoded line.mkv. Reports view-level
      AUROC (each view's score against its part's `defective`), part-level
      AUROC (the median score of each part's views), the verdicts at the
      sidecar's threshold (anomalib's normalised score >= 0.5; a part is
      rejected when its median view is), and for defective parts where the
      map's peak lies: inside one of the part's truth defect boxes (in crop
      pixels) or not, per view and per part (a part counts when most of its
      views do). Exit status 1 below the goals (part AUROC 0.95, view AUROC
      0.90). --views writes each view's part, frame, raw and normalised
      score and peak, for comparison with the plugin's JSON.
  eval_anomaly.py heldout [--model M.pt] [--seed S] [--count N]
      the same figures on held-out scenes at the line's station with good
      and defective parts (anomaly_crops.py, seeds 7,800,000..; never fitted
      on), per defect type
  eval_anomaly.py plugin FILE.jsonl [--sidecar models/demo/part_anomaly.json]
      the same view/part figures from torchmetaconvert's JSON lines of the
      two-stage pipeline on line.mkv (detector, then the anomaly model with
      inference-region=roi-list object-class=bracket,washer
      object-padding=0.1): on each frame a judged part is whole, the
      detection with the highest IoU (>= 0.5) with its truth box that
      carries an "anomaly" object gives the view's raw score; a view
      without one is counted as lost
  eval_anomaly.py fixture OUTDIR [--model M.pt]
      the C++ test's fixture (tests/data/part_anomaly_*): one good and one
      defective clip view (FIXTURE: part, frame) rounded to 8 bits as PPM,
      and part_anomaly_crops.json with each one's defect boxes (crop
      pixels) and the model's raw score and map peak on the rounded pixels
  eval_anomaly.py latency --model A.pt [--model B.pt ...] [--batch 1] [--iters 200]
      Python torch.jit, frozen and optimize_for_inference'd as torchinfer
      loads a model, 2 threads, 96x96 inputs in channels_last: median ms
      per call and per crop, the models interleaved round by round so they
      see the same machine load
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

DEFAULT_MODEL = os.path.join(HERE, "part_anomaly.pt")
HELDOUT_SEED = 7_800_000
GOALS = {"part": 0.95, "view": 0.90}
# (name, part, frame): a good washer and a bracket with a spot, mid-view.
FIXTURE = [("good", 3, 106), ("defective", 8, 230)]


def load(path):
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"
    with open(os.path.splitext(path)[0] + ".json") as f:
        return torch.jit.load(path).eval(), json.load(f)


def run(model, crops, batch=64):
    """(maps [N,96,96] numpy, raw scores [N]) of float 0..255 crops [N,96,96,3]."""
    x = torch.from_numpy(np.ascontiguousarray(crops, np.float32)).permute(0, 3, 1, 2)
    maps, scores = [], []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out = model(dc.normalise(x[i:i + batch]))
            maps.append(out["anomaly_map"][:, 0])
            scores.append(out["pred_score"])
    return torch.cat(maps).numpy(), torch.cat(scores).numpy()


def normalised(raw, meta, key="image_threshold"):
    """anomalib's min-max normalisation: threshold -> 0.5, clamped to [0, 1]."""
    return np.clip((raw - meta[key]) / (meta["max"] - meta["min"]) + 0.5, 0.0, 1.0)


def auroc(scores, positive):
    s, y = np.asarray(scores, np.float64), np.asarray(positive, bool)
    pos, neg = s[y], s[~y]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def peak(amap):
    """(x, y) centre of the map's hottest pixel, in crop pixels."""
    y, x = np.unravel_index(int(np.argmax(amap)), amap.shape)
    return x + 0.5, y + 0.5


def in_any(point, boxes):
    return any(b[0] <= point[0] <= b[2] and b[1] <= point[1] <= b[3] for b in boxes)


def distance(point, boxes):
    """Crop pixels from the point to the nearest box (0 inside)."""
    return min(float(np.hypot(max(b[0] - point[0], 0, point[0] - b[2]),
                              max(b[1] - point[1], 0, point[1] - b[3]))) for b in boxes)


def clip(args):
    model, meta = load(args.model)
    crops, views = ac.clip_views(args.truth)
    maps, raw = run(model, crops)
    score = normalised(raw, meta)
    defective = np.array([v["defective"] for v in views])
    parts = sorted({v["part"] for v in views})
    print(f"{os.path.basename(args.model)} on the decoded clip: {len(views)} whole views of "
          f"{len(parts)} parts (truth boxes, padding {dc.PADDING}); threshold "
          f"{meta['image_threshold']} (normalised 0.5)")
    medians, labels, right, located = [], [], 0, []
    for p in parts:
        idx = [i for i, v in enumerate(views) if v["part"] == p]
        med = float(np.median(score[idx]))
        bad = views[idx[0]]["defective"]
        reject = med >= 0.5
        right += reject == bad
        medians.append(float(np.median(raw[idx])))
        labels.append(bad)
        where = ""
        if bad:
            hits = [in_any(peak(maps[i]), views[i]["boxes"]) for i in idx]
            located.append((sum(hits), len(hits)))
            miss = [distance(peak(maps[i]), views[i]["boxes"]) for i, h in zip(idx, hits) if not h]
            where = f"  peak in defect box {sum(hits)}/{len(hits)}" + (
                f" (misses: median {np.median(miss):.1f} px outside)" if miss else "")
        print(f"  part {p:2d} {'defective' if bad else 'good':9s} {len(idx):2d} views: median raw "
              f"{medians[-1]:7.3f} score {med:.3f} -> {'reject' if reject else 'pass'}"
              f"{'' if reject == bad else '  WRONG'}{where}")
    view_auc, part_auc = auroc(raw, defective), auroc(medians, labels)
    view_right = int(((score >= 0.5) == defective).sum())
    hit_views = sum(h for h, _ in located)
    hit_parts = sum(h * 2 > n for h, n in located)
    print(f"  view AUROC {view_auc:.4f} (goal {GOALS['view']}), part AUROC {part_auc:.4f} "
          f"(goal {GOALS['part']})")
    print(f"  verdicts: parts {right}/{len(parts)}, views {view_right}/{len(views)}")
    print(f"  map peak inside a truth defect box: views {hit_views}/{sum(n for _, n in located)}, "
          f"parts {hit_parts}/{len(located)}")
    if args.views:
        with open(args.views, "w") as f:
            json.dump([{**{k: v[k] for k in ("part", "frame", "defective")}, "raw": float(r),
                        "score": float(s), "peak": peak(m)} for v, r, s, m in
                       zip(views, raw, score, maps)], f)
    return int(part_auc < GOALS["part"] or view_auc < GOALS["view"])


def heldout(args):
    model, meta = load(args.model)
    crops, labels, boxes, _ = ac.crop_set(args.seed, args.count, dc.LABEL_P)
    maps, raw = run(model, crops)
    bad = labels > 0
    good_flagged = int((raw[~bad] >= meta["image_threshold"]).sum())
    print(f"{os.path.basename(args.model)} on held-out station scenes {args.seed}..: "
          f"{int((~bad).sum())} good, {int(bad.sum())} defective crops; AUROC {auroc(raw, bad):.4f}; "
          f"good flagged {good_flagged}/{int((~bad).sum())}")
    for k, name in enumerate(dc.LABELS[1:], 1):
        sel = labels == k
        if not sel.any():
            continue
        sub = sel | ~bad
        hits = sum(in_any(peak(maps[i]), [boxes[i]]) for i in np.flatnonzero(sel))
        print(f"  {name:12s} {int(sel.sum()):3d} crops: AUROC vs good {auroc(raw[sub], sel[sub]):.4f}, "
              f"flagged {int((raw[sel] >= meta['image_threshold']).sum())}, "
              f"peak in defect box {hits}/{int(sel.sum())}")
    return 0


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)


def plugin(args):
    with open(args.truth) as f:
        truth = json.load(f)
    with open(args.sidecar) as f:
        meta = json.load(f)
    frames = {}
    with open(args.jsonl) as f:
        for line in f:
            rec = json.loads(line)
            frames[rec["frame"]] = rec
    raw, labels, medians, part_labels, right, lost = [], [], [], [], 0, 0
    for p in truth["parts"]:
        if p["first_full"] is None:
            continue
        scores = []
        for t in range(p["first_full"], p["last_full"] + 1):
            box = next(o["bbox"] for o in truth["frames"][t]["objects"]
                       if o["part"] == p["id"] and o["class"] in ("bracket", "washer"))
            rec = frames.get(t, {"detections": []})
            best, best_iou = None, 0.5
            for d in rec["detections"]:
                if "anomaly" not in d:
                    continue
                b = d["box"]  # frame pixels
                pix = [b["x_min"], b["y_min"], b["x_max"], b["y_max"]]
                if iou(pix, box) >= best_iou:
                    best, best_iou = d, iou(pix, box)
            if best is None:
                lost += 1
                continue
            scores.append(best["anomaly"]["raw_score"])
        raw += scores
        labels += [p["defective"]] * len(scores)
        if not scores:
            print(f"  part {p['id']:2d} never judged  WRONG")
            continue
        med = float(np.median(scores))
        reject = normalised(med, meta) >= 0.5
        right += reject == p["defective"]
        medians.append(med)
        part_labels.append(p["defective"])
        print(f"  part {p['id']:2d} {'defective' if p['defective'] else 'good':9s} {len(scores):2d} views: "
              f"median raw {med:7.3f} -> {'reject' if reject else 'pass'}"
              f"{'' if reject == p['defective'] else '  WRONG'}")
    view_right = sum((normalised(r, meta) >= 0.5) == y for r, y in zip(raw, labels))
    print(f"  view AUROC {auroc(raw, labels):.4f}, part AUROC {auroc(medians, part_labels):.4f}; "
          f"verdicts: parts {right}/{len(part_labels)}, views {view_right}/{len(raw)}; "
          f"{lost} whole part-frames without a scored detection")
    return int(auroc(medians, part_labels) < GOALS["part"] or auroc(raw, labels) < GOALS["view"])


def fixture(args):
    model, meta = load(args.model)
    crops, views = ac.clip_views(args.truth)
    os.makedirs(args.outdir, exist_ok=True)
    entries = []
    for name, part, frame in FIXTURE:
        i = next(k for k, v in enumerate(views) if v["part"] == part and v["frame"] == frame)
        pixels = np.clip(np.round(crops[i]), 0, 255).astype(np.uint8)
        path = f"part_anomaly_{name}.ppm"
        with open(os.path.join(args.outdir, path), "wb") as f:
            f.write(f"P6\n{dc.SIZE} {dc.SIZE}\n255\n".encode() + pixels.tobytes())
        maps, raw = run(model, pixels[None].astype(np.float32))
        entries.append({"file": path, "part": part, "frame": frame,
                        "defective": views[i]["defective"],
                        "defect_boxes": [[round(c, 2) for c in b] for b in views[i]["boxes"]],
                        "raw_score": round(float(raw[0]), 5), "peak": peak(maps[0])})
        print(f"{path}: part {part} frame {frame} raw {raw[0]:.4f} peak {peak(maps[0])}")
    with open(os.path.join(args.outdir, "part_anomaly_crops.json"), "w") as f:
        json.dump({"_": "written by models/demo/eval_anomaly.py fixture; raw_score and peak: "
                        f"{os.path.basename(args.model)} on these 8-bit pixels",
                   "crops": entries}, f, indent=1)
        f.write("\n")
    return 0


def latency(args):
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"
    x = dc.normalise(torch.randint(0, 256, (args.batch, 3, dc.SIZE, dc.SIZE)))
    models = []
    for path in args.model:
        m = torch.jit.freeze(torch.jit.load(path).eval())
        if "int8" not in os.path.basename(path):  # as the engine: not for quantized models
            m = torch.jit.optimize_for_inference(m)
        models.append(m)
    times = [[] for _ in models]
    with torch.no_grad():
        for m in models:
            for _ in range(5):
                m(x)
        for _ in range(args.iters):
            for m, t in zip(models, times):
                t0 = time.perf_counter()
                m(x)
                t.append(time.perf_counter() - t0)
    print(f"Python torch.jit {torch.__version__}, 2 threads, batch {args.batch}, 96x96, "
          f"{args.iters} interleaved rounds, median:")
    base = None
    for path, t in zip(args.model, times):
        ms = 1000 * float(np.median(t))
        base = base or ms
        print(f"  {os.path.basename(path):28s} {ms:8.3f} ms/call  {ms / args.batch:7.3f} ms/crop  "
              f"{1000 * args.batch / ms:7.0f} crops/s  x{ms / base:.2f}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("clip")
    c.add_argument("--model", default=DEFAULT_MODEL)
    c.add_argument("--truth", default=os.path.join(HERE, "line.truth.json"))
    c.add_argument("--views", help="write per-view scores and peaks to this JSON file")
    h = sub.add_parser("heldout")
    h.add_argument("--model", default=DEFAULT_MODEL)
    h.add_argument("--seed", type=int, default=HELDOUT_SEED)
    h.add_argument("--count", type=int, default=250, help="scenes (about 1.7 parts each)")
    g = sub.add_parser("plugin")
    g.add_argument("jsonl")
    g.add_argument("--truth", default=os.path.join(HERE, "line.truth.json"))
    g.add_argument("--sidecar", default=os.path.join(HERE, "part_anomaly.json"))
    x = sub.add_parser("fixture")
    x.add_argument("outdir")
    x.add_argument("--model", default=DEFAULT_MODEL)
    x.add_argument("--truth", default=os.path.join(HERE, "line.truth.json"))
    t = sub.add_parser("latency")
    t.add_argument("--model", action="append", required=True)
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    return {"clip": clip, "heldout": heldout, "plugin": plugin, "fixture": fixture,
            "latency": latency}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
