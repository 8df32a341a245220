#!/usr/bin/python3
"""Held-out evaluation of the demo detector: data, Python reference, plugin.

  eval_detector.py generate OUTDIR [--count 200] [--seed 4000000]
      lossless 640x480 PNGs OUTDIR/0000.png ... and OUTDIR/truth.json
      (make_detection_data.write_set; byte-identical on every run), for a
      pipeline such as
        gst-launch-1.0 multifilesrc location=OUTDIR/%04d.png index=0 \\
          caps=image/png,framerate=30/1 ! pngdec ! videoconvert ! \\
          torchinfer model=models/demo/parts_detector.pt ! \\
          torchnms confidence-threshold=0.001 ! torchmetaconvert location=dets.jsonl
  eval_detector.py reference OUTDIR [--model models/demo/parts_detector.pt]
                   [--jsonl-out FILE]
      the Python reference: the TorchScript model on the PNGs, preprocessed
      as the plugin does (area resize of the whole frame to the sidecar's
      input size in float, then (pixel/255 - mean)/std, RGB), YOLOv5-style decoding
      and per-class NMS (torchvision batched_nms), boxes scaled back to
      frame pixels; --jsonl-out writes those detections in the JSON-lines
      layout read by `plugin`, to check the reader itself
  eval_detector.py frames FILE.raw [--count N] [--seed S] [--model M.pt]
      preprocessed frames for quantize.py in torchinfer-dump-frames' format
      (FILE.raw float32 NHWC + FILE.raw.json) and FILE.raw.truth.json (boxes
      in model-input pixels, for quantize.py --heldout-truth); the frames are
      rendered in memory (the same pixels as the PNGs for the same seeds)
      and preprocessed as in `reference`
  eval_detector.py latency [--model M.pt ...] [--runs 100]
      median per-call time at batch 1, 2 threads, of the TorchScript file as
      shipped (eager TorchScript; the plugin is faster: it freezes and runs
      optimize_for_inference at load time)
  eval_detector.py plugin OUTDIR FILE.jsonl
      mAP@0.5 of detections exported by torchmetaconvert (one JSON object per
      frame, in frame order)

mAP@0.5: see models/detection_metrics.py (VOC all-point interpolation, per
class, mean over classes; "ignore" boxes neither count nor penalise).
Thresholds: confidence >= 0.001 for mAP (low, so the whole precision/recall
curve is measured; 0.25 in the sidecar is for display), NMS IoU 0.45, at most
300 detections per frame.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import detection_metrics as dm  # noqa: E402
import make_detection_data as md  # noqa: E402
import make_frames as mf  # noqa: E402

CONF, IOU, MAX_DET = 0.001, 0.45, 300


def load_truth(outdir):
    with open(os.path.join(outdir, "truth.json")) as f:
        t = json.load(f)
    truths = [[(*o["bbox"], o["class_id"], o["ignore"]) for o in fr["objects"]] for fr in t["frames"]]
    return t, truths


def area_resize(img, width, height):
    """Area (box) resize in float, without rounding to 8 bits: the plugin's
    resampler keeps the averages in float, and this model's scores move by
    up to ~0.05 when its input is rounded (make_frames.downscale rounds)."""
    return np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(img[:, :, c], np.float32), "F")
                                .resize((width, height), Image.BOX)) for c in range(img.shape[2])], 2)


def preprocess(img, meta):
    """Frame (HxWx3 uint8 RGB) -> [1, 3, h, w] float as the plugin feeds it
    (matches its tensors to ~1e-6 on the held-out PNGs)."""
    w, h = meta["input_width"], meta["input_height"]
    small = area_resize(img, w, h) / 255
    if "scale" in meta:  # alternative to mean/std: value = pixel * scale + offset
        small = small * 255 * meta["scale"] + np.asarray(meta.get("offset", 0.0), np.float32)
    else:
        small = (small - np.asarray(meta.get("mean", 0.0), np.float32)) / \
            np.asarray(meta.get("std", 1.0), np.float32)
    return torch.from_numpy(small).permute(2, 0, 1)[None].contiguous(memory_format=torch.channels_last)


def reference_detections(model_path, outdir, frames):
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"  # int8 models; no fbgemm in Debian's torch
    with open(os.path.splitext(model_path)[0] + ".json") as f:
        meta = json.load(f)
    model = torch.jit.load(model_path).eval()
    sx, sy = mf.WIDTH / meta["input_width"], mf.HEIGHT / meta["input_height"]
    dets = []
    with torch.no_grad():
        for fr in frames:
            img = np.asarray(Image.open(os.path.join(outdir, fr["file"])).convert("RGB"))
            out = model(preprocess(img, meta))[0]
            dets.append([clip_box(x0 * sx, y0 * sy, x1 * sx, y1 * sy) + (s, c)
                         for x0, y0, x1, y1, s, c in dm.decode(out, CONF, IOU, MAX_DET)])
    return dets


def clip_box(x0, y0, x1, y1):
    """Boxes end at the frame edge, as the plugin's decoder clips them."""
    return (min(max(x0, 0.0), mf.WIDTH), min(max(y0, 0.0), mf.HEIGHT),
            min(max(x1, 0.0), mf.WIDTH), min(max(y1, 0.0), mf.HEIGHT))


def latency(model_path, runs):
    import time
    torch.set_num_threads(2)
    torch.backends.quantized.engine = "onednn"
    with open(os.path.splitext(model_path)[0] + ".json") as f:
        meta = json.load(f)
    model = torch.jit.load(model_path).eval()
    x = torch.rand(1, 3, meta["input_height"], meta["input_width"])
    x = x.contiguous(memory_format=torch.channels_last)
    times = []
    with torch.no_grad():
        for i in range(runs + 10):
            t0 = time.perf_counter()
            model(x)
            if i >= 10:  # the first calls profile and optimise the graph
                times.append(time.perf_counter() - t0)
    times.sort()
    print(f"{os.path.basename(model_path)}: median {1000 * times[len(times) // 2]:.2f} ms, "
          f"p90 {1000 * times[int(len(times) * 0.9)]:.2f} ms per frame (batch 1, 2 threads, "
          f"{runs} runs)")


def write_frames(out, first_seed, count, model_path):
    with open(os.path.splitext(model_path)[0] + ".json") as f:
        meta = json.load(f)
    sx, sy = meta["input_width"] / mf.WIDTH, meta["input_height"] / mf.HEIGHT
    truths = []
    with open(out, "wb") as f:
        for seed in range(first_seed, first_seed + count):
            img, objects = md.render_sample(seed)
            f.write(preprocess(img, meta)[0].permute(1, 2, 0).contiguous().numpy().tobytes())
            truths.append([[o["bbox"][0] * sx, o["bbox"][1] * sy, o["bbox"][2] * sx,
                            o["bbox"][3] * sy, o["class_id"], o["ignore"]] for o in objects])
    hdr = {"dtype": "float32", "layout": "NHWC", "count": count, "height": meta["input_height"],
           "width": meta["input_width"], "channels": 3,
           "clip": f"make_detection_data seeds {first_seed}..{first_seed + count - 1}",
           "every": 1, "model_config": os.path.splitext(model_path)[0] + ".json"}
    with open(out + ".json", "w") as f:
        json.dump(hdr, f, indent=2)
    with open(out + ".truth.json", "w") as f:
        json.dump({"classes": md.CLASSES, "units": "model-input pixels", "frames": truths}, f)
    print(f"wrote {count} preprocessed frames to {out} (+ .json, .truth.json)")


def detection_from_json(d, frame_w, frame_h):
    """One detection object of torchmetaconvert's JSON -> (x0, y0, x1, y1,
    confidence, label_id) in frame pixels. The only place that knows the
    field names: adjust here if the exporter's layout changes. Accepts a
    pixel box as "bbox": [x0, y0, x1, y1] or "box": {"x", "y", "w", "h"} /
    {"x_min", ...}, or DL Streamer-style normalised "x_min".."y_max"."""
    conf = float(d["confidence"])
    cls = int(d["label_id"]) if "label_id" in d else md.CLASSES.index(d["label"])
    if "bbox" in d:
        x0, y0, x1, y1 = (float(v) for v in d["bbox"])
    else:
        b = d.get("box", d)
        if "w" in b:
            x0, y0 = float(b["x"]), float(b["y"])
            x1, y1 = x0 + float(b["w"]), y0 + float(b["h"])
        else:
            x0, y0, x1, y1 = (float(b[k]) for k in ("x_min", "y_min", "x_max", "y_max"))
            if max(x1, y1) <= 1.0 and "box" not in d:  # normalised, as in the ROI structure
                x0, x1, y0, y1 = x0 * frame_w, x1 * frame_w, y0 * frame_h, y1 * frame_h
    return (x0, y0, x1, y1, conf, cls)


def read_jsonl(path, count):
    dets = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            fw, fh = rec.get("width", mf.WIDTH), rec.get("height", mf.HEIGHT)
            dets.append([detection_from_json(d, fw, fh) for d in rec.get("detections", [])])
    if len(dets) != count:
        sys.exit(f"{path}: {len(dets)} frames, the held-out set has {count}")
    return dets


def write_jsonl(path, dets):
    with open(path, "w") as f:
        for i, fd in enumerate(dets):
            f.write(json.dumps({"frame": i, "width": mf.WIDTH, "height": mf.HEIGHT, "detections": [
                {"label": md.CLASSES[c], "label_id": c, "confidence": round(s, 6),
                 "bbox": [round(v, 2) for v in (x0, y0, x1, y1)]}
                for x0, y0, x1, y1, s, c in fd]}) + "\n")


def report(what, dets, truths):
    m, aps, npos = dm.average_precision(dets, truths, len(md.CLASSES))
    print(f"{what}: mAP@0.5 {m:.4f} on {len(truths)} frames "
          f"(confidence >= {CONF}, NMS IoU {IOU})")
    for c, a, n in zip(md.CLASSES, aps, npos):
        print(f"  {c:13s} AP {'-' if a is None else f'{a:.4f}'}  ({n} boxes)")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("outdir")
    g.add_argument("--count", type=int, default=200)
    g.add_argument("--seed", type=int, default=md.HELDOUT_SEED)
    r = sub.add_parser("reference")
    r.add_argument("outdir")
    r.add_argument("--model", default=os.path.join(HERE, "parts_detector.pt"))
    r.add_argument("--jsonl-out")
    fr = sub.add_parser("frames")
    fr.add_argument("out")
    fr.add_argument("--count", type=int, default=200)
    fr.add_argument("--seed", type=int, default=md.HELDOUT_SEED)
    fr.add_argument("--model", default=os.path.join(HERE, "parts_detector.pt"))
    la = sub.add_parser("latency")
    la.add_argument("--model", action="append")
    la.add_argument("--runs", type=int, default=100)
    p = sub.add_parser("plugin")
    p.add_argument("outdir")
    p.add_argument("jsonl")
    args = ap.parse_args()

    if args.cmd == "generate":
        frames = md.write_set(args.outdir, args.seed, args.count)
        print(f"wrote {len(frames)} frames ({sum(len(f['objects']) for f in frames)} objects) "
              f"and truth.json to {args.outdir}")
        return 0
    if args.cmd == "latency":
        for path in args.model or [os.path.join(HERE, "parts_detector.pt")]:
            latency(path, args.runs)
        return 0
    if args.cmd == "frames":
        write_frames(args.out, args.seed, args.count, args.model)
        return 0
    t, truths = load_truth(args.outdir)
    if args.cmd == "reference":
        dets = reference_detections(args.model, args.outdir, t["frames"])
        if args.jsonl_out:
            write_jsonl(args.jsonl_out, dets)
        report(f"reference {os.path.basename(args.model)}", dets, truths)
    else:
        report(f"plugin {os.path.basename(args.jsonl)}", read_jsonl(args.jsonl, len(truths)), truths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
