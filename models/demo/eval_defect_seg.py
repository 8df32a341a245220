#!/usr/bin/python3
"""Figures of the demo defect segmentation model (Python reference decode).

  eval_defect_seg.py clip [--model models/demo/defect_seg.pt]
      the decoded line.mkv against line.masks.json (truth masks) and
      line.truth.json (parts, verdicts): per defect class the mask IoU of
      each truth defect in view (not "ignore") with its matched detection
      (0 when missed), recall at mask IoU 0.5, false detections, the
      defect-area error in pixels of matched defects, and a verdict per
      judged part by defect area (median over the frames it is whole of
      the detected defect pixels inside its truth box; reject at
      >= --reject-area px). Exit status 1 if a verdict is wrong.
  eval_defect_seg.py jsonl RESULTS [--reject-area 100]
      the same figures for the masks the plugin gave (torchnms yolov8-seg
      through torchmetaconvert, e.g. out/demo-segment/results.jsonl of
      ./scripts/demo.sh --segment): each detection with a "mask" (rle
      inside its x, y, width, height) against line.masks.json
  eval_defect_seg.py false [--iou 0.3]
      where the clip's false detections lie, per class: a second detection
      on a truth defect, a drilled hole, a washer's bore, other material of
      a part (whole or cut by the frame edge), off the parts; their scores
  eval_defect_seg.py heldout [--count 200] [--seed 8500000]
      the same mask figures on held-out scenes (seg_data.py, never trained on)
  eval_defect_seg.py latency --model A.pt [--model B.pt --size 320x240 ...]
      Python torch.jit, frozen and optimize_for_inference'd as torchinfer
      loads a model, 2 threads, batch 1 in channels_last: median ms per
      frame, the models interleaved round by round (same machine load)

Decoding (what torchnms' yolov8-seg decoder does, written here from the
layout, not from Ultralytics' code): score = max class score >= --conf,
per-class NMS at the sidecar's IoU (0.3; --iou), at most 100; mask = coefficients . prototypes,
upsampled bilinearly (align_corners false) x4 to the 640x480 input (= the
frame: no resize), cut to the box (pixels whose centre lies in it), > 0,
i.e. sigmoid > 0.5 of the interpolated value: torchnms interpolates the
linear values, not the sigmoid (models/seg_reference.py); interpolating
sigmoid probabilities instead, as this script first did, gives masks a
little smaller and mean mask IoU 0.782 on the clip instead of 0.826. Matching: per frame and class, truth and detections paired
greedily by mask IoU, highest first (pairs with IoU > 0 only); a detection
overlapping an ignored truth defect is neither a hit nor a false one.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_masks as dmk  # noqa: E402
import make_clip  # noqa: E402
import make_frames as mf  # noqa: E402
import seg_data as sd  # noqa: E402

DEFAULT_MODEL = os.path.join(HERE, "defect_seg.pt")
IOU_NMS, MAX_DET = json.load(open(os.path.join(HERE, "defect_seg.json")))["iou_threshold"], 100
MASK_LOGIT = 0.0  # sigmoid > 0.5


def preprocess(img):
    x = torch.from_numpy(np.array(img)).permute(2, 0, 1)[None].float() / 255
    return x.contiguous(memory_format=torch.channels_last)


def decode(dets, protos, conf, height=mf.HEIGHT, width=mf.WIDTH, iou=IOU_NMS):
    """One image's outputs -> [(class, score, box [x0,y0,x1,y1], bool HxW mask)]."""
    nc = dets.shape[0] - 4 - protos.shape[0]
    scores, cls = dets[4:4 + nc].max(0)
    keep = (scores >= conf).nonzero().flatten()
    if keep.numel() == 0:
        return []
    cx, cy, w, h = dets[:4, keep]
    boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
    order = torchvision.ops.batched_nms(boxes, scores[keep], cls[keep], iou)[:MAX_DET]
    keep, boxes = keep[order], boxes[order]
    coef = dets[4 + nc:, keep].t()
    val = (coef @ protos.flatten(1)).view(-1, 1, *protos.shape[1:])
    val = F.interpolate(val, size=(height, width), mode="bilinear", align_corners=False)[:, 0]
    ys = torch.arange(height, dtype=torch.float32)[None, :, None] + 0.5
    xs = torch.arange(width, dtype=torch.float32)[None, None, :] + 0.5
    inbox = ((xs >= boxes[:, 0, None, None]) & (xs <= boxes[:, 2, None, None]) &
             (ys >= boxes[:, 1, None, None]) & (ys <= boxes[:, 3, None, None]))
    masks = (val > MASK_LOGIT) & inbox
    return [(int(cls[k]), float(scores[k]), boxes[i].tolist(), masks[i].numpy())
            for i, k in enumerate(keep.tolist())]


def run_model(model, frames, conf, iou=IOU_NMS):
    out = []
    with torch.no_grad():
        for img in frames:
            dets, protos = model(preprocess(img))
            out.append(decode(dets[0], protos[0], conf, iou=iou))
    return out


def match_frame(truths, dets, stats):
    """truths: [(class, bool mask, ignore)]; updates stats per class.
    Returns the indices (into dets) of the false detections."""
    false_dets = []
    for c in range(len(sd.CLASSES)):
        tr = [(m, ig) for k, m, ig in truths if k == c]
        di = [j for j, (k, _, _, _) in enumerate(dets) if k == c]
        dt = [dets[j][3] for j in di]
        iou = np.zeros((len(tr), len(dt)))
        for i, (tm, _) in enumerate(tr):
            for j, dm in enumerate(dt):
                inter = np.logical_and(tm, dm).sum()
                iou[i, j] = inter / max(np.logical_or(tm, dm).sum(), 1)
        used_t, used_d = set(), set()
        for flat in np.argsort(-iou, axis=None):
            i, j = np.unravel_index(flat, iou.shape)
            if iou[i, j] <= 0:
                break
            if i in used_t or j in used_d:
                continue
            used_t.add(i)
            used_d.add(j)
            if not tr[i][1]:
                s = stats[c]
                s["iou"].append(iou[i, j])
                s["area_err"].append(int(dt[j].sum()) - int(tr[i][0].sum()))
                s["truth_area"].append(int(tr[i][0].sum()))
        for i, (tm, ig) in enumerate(tr):
            if not ig and i not in used_t:
                stats[c]["iou"].append(0.0)
        stats[c]["false"] += sum(j not in used_d for j in range(len(dt)))
        false_dets += [di[j] for j in range(len(dt)) if j not in used_d]
    return false_dets


def report(title, stats):
    print(f"{title}:")
    print(f"  {'class':13s} {'truth':>5s} {'mean IoU':>8s} {'median':>7s} {'rec@0.5':>7s} "
          f"{'false':>5s} {'|area err| px: median':>22s} {'mean':>6s} {'bias':>6s} {'rel':>6s}")
    allio = []
    for c, name in enumerate(sd.CLASSES):
        s = stats[c]
        io, err = np.array(s["iou"]), np.array(s["area_err"])
        allio += s["iou"]
        rel = np.median(np.abs(err) / np.array(s["truth_area"])) if err.size else float("nan")
        print(f"  {name:13s} {io.size:5d} {io.mean() if io.size else 0:8.3f} "
              f"{np.median(io) if io.size else 0:7.3f} {(io >= 0.5).mean() if io.size else 0:7.3f} "
              f"{s['false']:5d} {np.median(np.abs(err)) if err.size else 0:22.1f} "
              f"{np.abs(err).mean() if err.size else 0:6.1f} {err.mean() if err.size else 0:6.1f} "
              f"{rel:6.3f}")
    print(f"  all defects: {len(allio)} truth, mean mask IoU {np.mean(allio):.3f}, "
          f"recall@0.5 {np.mean(np.array(allio) >= 0.5):.3f}")


def new_stats():
    return [{"iou": [], "area_err": [], "truth_area": [], "false": 0} for _ in sd.CLASSES]


def clip_truth(masks_path):
    data = json.load(open(masks_path))
    out = []
    for f in data["frames"]:
        items = []
        for m in f["masks"]:
            x0, y0, w, h = m["box"]
            full = dmk.paste((x0, y0, dmk.decode_rle(m["rle"], w, h)))
            items.append((sd.CLASSES.index(m["class"]), full, m["ignore"], m["part"]))
        out.append(items)
    return out


def verdicts(dets, truth, reject_area):
    """Per judged part: median over its whole frames of the detected defect
    pixels inside its truth box; reject at >= reject_area."""
    right, judged = 0, 0
    for p in truth["parts"]:
        if p["first_full"] is None:
            continue
        areas, true_areas = [], []
        for t in range(p["first_full"], p["last_full"] + 1):
            box = next(o["bbox"] for o in truth["frames"][t]["objects"]
                       if o["part"] == p["id"] and o["class"] in ("bracket", "washer"))
            x0, y0 = int(np.floor(box[0])), int(np.floor(box[1]))
            x1, y1 = int(np.ceil(box[2])), int(np.ceil(box[3]))
            union = np.zeros((mf.HEIGHT, mf.WIDTH), bool)
            for _, _, _, m in dets[t]:
                union |= m
            areas.append(int(union[y0:y1, x0:x1].sum()))
        area = float(np.median(areas))
        reject = area >= reject_area
        judged += 1
        right += reject == (p["verdict"] == "reject")
        print(f"  part {p['id']:2d} {p['kind']:12s} truth {p['verdict']:6s} "
              f"{(p['defects'] or ['ok'])[0]:12s} defect area {area:6.0f} px  -> "
              f"{'reject' if reject else 'pass'}")
    print(f"verdicts by defect area (reject at >= {reject_area} px): {right}/{judged} parts right")
    return right == judged


def clip(args):
    torch.set_num_threads(2)
    model = torch.jit.load(args.model).eval()
    frames = make_clip.decode(os.path.join(HERE, "line.mkv"))
    truth = json.load(open(os.path.join(HERE, "line.truth.json")))
    tmasks = clip_truth(os.path.join(HERE, "line.masks.json"))
    t0 = time.time()
    dets = run_model(model, frames, args.conf, args.iou)
    print(f"{len(frames)} frames in {time.time() - t0:.0f} s")
    stats = new_stats()
    for tr, dt in zip(tmasks, dets):
        match_frame([(c, m, ig) for c, m, ig, _ in tr], dt, stats)
    report(f"{os.path.basename(args.model)} on the decoded line.mkv (conf {args.conf}, "
           f"NMS IoU {args.iou})", stats)
    return 0 if verdicts(dets, truth, args.reject_area) else 1


def _where(part, x, y):
    """Where frame point (x, y) lies on `part`: "drilled hole" (within 3 px of
    a hole the part has), "washer bore", "material" (inside the outline) or
    None (off the part)."""
    a = np.radians(part.angle)
    dx, dy = x - part.cx, y - part.cy
    u, v = np.cos(a) * dx + np.sin(a) * dy, -np.sin(a) * dx + np.cos(a) * dy
    u = -u if part.mirror else u
    for i, (hu, hv, hr) in enumerate(part.holes):
        drilled = not (part.defect == "missing_hole" and i == part.defect_params["hole"])
        if drilled and np.hypot(u - hu, v - hv) <= hr + 3:
            return "drilled hole"
    if part.kind == "washer" and np.hypot(u, v) <= part.dims["r_in"] + 3:
        return "washer bore"
    return "material" if mf._outline_sdf(part, np.array(u), np.array(v)) <= 2 else None


def false_places(args):
    """Where the clip's false detections lie, per class, with their scores."""
    import make_detection_clip as mdc
    torch.set_num_threads(2)
    model = torch.jit.load(args.model).eval()
    frames = make_clip.decode(os.path.join(HERE, "line.mkv"))
    tmasks = clip_truth(os.path.join(HERE, "line.masks.json"))
    dets = run_model(model, frames, args.conf, args.iou)
    parts = mdc.make_parts()
    rows, kept_scores, drilled_seen = [], [], 0
    for t, (tr, dt) in enumerate(zip(tmasks, dets)):
        false = set(match_frame([(c, m, ig) for c, m, ig, _ in tr], dt, new_stats()))
        scene = mdc.frame_scene(parts, t)
        for p in scene.parts:
            x0, y0, x1, y1 = mf.part_bbox(p)
            if p.kind != "washer" and x0 >= 0 and x1 <= mf.WIDTH:
                drilled_seen += len(p.holes) - (p.defect == "missing_hole")
        for j, (c, score, box, m) in enumerate(dt):
            if j not in false:
                kept_scores.append((c, score))
                continue
            ys, xs = np.nonzero(m)
            x, y = (xs.mean() + 0.5, ys.mean() + 0.5) if xs.size else (
                (box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            place = "off parts"
            if any(k == c and (m & tm).any() for k, tm, _, _ in tr):
                place = "second detection on a truth defect of its class"
            elif any((m & tm).any() for _, tm, _, _ in tr):
                place = "on a truth defect of another class"
            else:
                for p in scene.parts:
                    w = _where(p, x, y)
                    if w:
                        whole = mf.part_bbox(p)[0] >= 0 and mf.part_bbox(p)[2] <= mf.WIDTH
                        place = f"{w} ({p.kind}{'' if whole else ', cut by the frame edge'})"
                        break
            rows.append((sd.CLASSES[c], place, score, t))
    print(f"false detections on the decoded line.mkv (conf {args.conf}), by class and place "
          f"(mask centroid), score median [min, max]:")
    for c in sd.CLASSES:
        mine = [r for r in rows if r[0] == c]
        print(f"  {c}: {len(mine)}")
        for place in sorted({r[1] for r in mine}):
            sc = np.array([r[2] for r in mine if r[1] == place])
            fr = sorted({r[3] for r in mine if r[1] == place})
            print(f"    {place:48s} {sc.size:4d}  score {np.median(sc):.2f} [{sc.min():.2f}, "
                  f"{sc.max():.2f}]  frames {fr[0]}-{fr[-1]} ({len(fr)})")
        right = np.array([s for k, s in kept_scores if sd.CLASSES[k] == c])
        if right.size:
            print(f"    (matched or on ignored truth: {right.size}, score median "
                  f"{np.median(right):.2f} [{right.min():.2f}, {right.max():.2f}])")
    print(f"drilled bracket holes in view on whole brackets, summed over frames: {drilled_seen}")
    for th in args.thresholds:
        f_mh = sum(1 for r in rows if r[0] == "missing_hole" and r[2] >= th)
        print(f"  at conf >= {th:.2f}: {f_mh} false missing_hole, "
              + ", ".join(f"{c} {sum(1 for r in rows if r[0] == c and r[2] >= th)}"
                          for c in sd.CLASSES if c != "missing_hole"))
    return 0


def jsonl_dets(path):
    """Per frame of a torchmetaconvert results file, its masked detections
    as decode() gives them: [(class, score, box, bool HxW mask)]."""
    frames = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            dets = []
            for d in rec.get("detections", []):
                m = d.get("mask")
                if m is None:
                    continue
                x, y, w, h = m["x"], m["y"], m["width"], m["height"]
                full = dmk.paste((x, y, dmk.decode_rle(m["rle"], w, h)))
                b = d["box"]
                dets.append((sd.CLASSES.index(d["label"]), d["confidence"],
                             [b["x_min"], b["y_min"], b["x_max"], b["y_max"]], full))
            frames[rec["frame"]] = dets
    return frames


def jsonl(args):
    truth = json.load(open(os.path.join(HERE, "line.truth.json")))
    tmasks = clip_truth(os.path.join(HERE, "line.masks.json"))
    frames = jsonl_dets(args.results)
    if sorted(frames) != list(range(len(tmasks))):
        sys.exit(f"{args.results}: frames {min(frames)}..{max(frames)} ({len(frames)}), "
                 f"the clip has {len(tmasks)}: not a whole run on line.mkv")
    dets = [frames[t] for t in range(len(tmasks))]
    stats = new_stats()
    for tr, dt in zip(tmasks, dets):
        match_frame([(c, m, ig) for c, m, ig, _ in tr], dt, stats)
    report(f"plugin masks of {args.results}", stats)
    return 0 if verdicts(dets, truth, args.reject_area) else 1


def heldout(args):
    torch.set_num_threads(2)
    model = torch.jit.load(args.model).eval()
    stats = new_stats()
    for seed in range(args.seed, args.seed + args.count):
        scene, img = sd._render(seed)
        truths = [(c, dmk.paste((x0, y0, m)), ig) for c, x0, y0, m, ig in sd.frame_instances(scene)]
        match_frame(truths, run_model(model, [img], args.conf, args.iou)[0], stats)
    report(f"{os.path.basename(args.model)} on {args.count} held-out frames "
           f"(seeds {args.seed}+, conf {args.conf}, NMS IoU {args.iou})", stats)
    return 0


def latency(args):
    torch.set_num_threads(2)
    sizes = args.size + ["640x480"] * (len(args.model) - len(args.size))
    models, inputs = [], []
    for path, size in zip(args.model, sizes):
        w, h = (int(v) for v in size.split("x"))
        models.append(torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(path).eval())))
        inputs.append(torch.rand(1, 3, h, w).contiguous(memory_format=torch.channels_last))
    times = [[] for _ in models]
    with torch.no_grad():
        for m, x in zip(models, inputs):
            for _ in range(5):
                m(x)
        for _ in range(args.iters):
            for m, x, t in zip(models, inputs, times):
                t0 = time.perf_counter()
                m(x)
                t.append(time.perf_counter() - t0)
    print(f"Python torch.jit {torch.__version__}, 2 threads, batch 1, {args.iters} interleaved "
          f"rounds, median:")
    base = None
    for path, size, t in zip(args.model, sizes, times):
        ms = 1000 * float(np.median(t))
        base = base or ms
        print(f"  {os.path.basename(path):24s} {size:8s} {ms:8.2f} ms/frame  {1000 / ms:6.1f} fps  "
              f"x{ms / base:.2f}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("clip")
    c.add_argument("--model", default=DEFAULT_MODEL)
    c.add_argument("--conf", type=float, default=0.25)
    c.add_argument("--iou", type=float, default=IOU_NMS)
    c.add_argument("--reject-area", type=float, default=100.0)
    js = sub.add_parser("jsonl")
    js.add_argument("results")
    js.add_argument("--reject-area", type=float, default=100.0)
    h = sub.add_parser("heldout")
    h.add_argument("--model", default=DEFAULT_MODEL)
    h.add_argument("--conf", type=float, default=0.25)
    h.add_argument("--iou", type=float, default=IOU_NMS)
    h.add_argument("--seed", type=int, default=sd.HELDOUT_SEED)
    h.add_argument("--count", type=int, default=200)
    fp = sub.add_parser("false")
    fp.add_argument("--model", default=DEFAULT_MODEL)
    fp.add_argument("--conf", type=float, default=0.25)
    fp.add_argument("--iou", type=float, default=IOU_NMS)
    fp.add_argument("--thresholds", type=float, nargs="*", default=[0.25, 0.4, 0.5, 0.6])
    lt = sub.add_parser("latency")
    lt.add_argument("--model", action="append", required=True)
    lt.add_argument("--size", action="append", default=[], help="WxH per --model (640x480)")
    lt.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    return {"clip": clip, "jsonl": jsonl, "heldout": heldout, "latency": latency,
            "false": false_places}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
