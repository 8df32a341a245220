#!/usr/bin/python3
"""Reference decoder for torchnms' decoder "yolov8-seg", written here from
the rule in src/decode/yolov8_seg.h and docs/elements.md (not from
Ultralytics' code), in float64 numpy, for the tests to compare against.

decode(head, protos, transform, frame_size, ...) takes one frame's outputs:
head [4 + C + M, A] (cx, cy, w, h in model-input pixels, C class scores, M
mask coefficients), protos [M, h, w], the frame->model transform
(scale_x, scale_y, offset_x, offset_y: model = frame * scale + offset), the
frame size and the model input size, and returns the detections, best
first, each a dict: label_id, confidence, box (x_min, y_min, x_max, y_max in
frame pixels, clipped), anchor, and its mask: grid (x, y, width, height),
area, rle (row-major runs starting with unset pixels).
"""
import math

import numpy as np


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def candidates(head, classes, conf):
    """Best class per anchor (first on ties), kept if >= conf and > 0 with a
    non-empty finite box."""
    out = []
    for a in range(head.shape[1]):
        scores = head[4:4 + classes, a]
        cls = int(np.argmax(scores))
        s = float(scores[cls])
        cx, cy, w, h = (float(v) for v in head[:4, a])
        if not (math.isfinite(s) and s >= conf and s > 0):
            continue
        if not all(math.isfinite(v) for v in (cx, cy, w, h)) or w <= 0 or h <= 0:
            continue
        out.append((s, a, cls, (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)))
    return out


def nms(cands, iou_threshold):
    """Greedy per class, best score first (stable on ties)."""
    order = sorted(range(len(cands)), key=lambda i: -cands[i][0])
    kept = []
    for i in order:
        if all(cands[k][2] != cands[i][2] or iou(cands[k][3], cands[i][3]) <= iou_threshold
               for k in kept):
            kept.append(i)
    return [cands[i] for i in kept]


def taps(first, count, scale, offset, cells_per_input, cells):
    model = (np.arange(first, first + count, dtype=np.float64) + 0.5) * scale + offset
    u = np.clip(model * cells_per_input - 0.5, 0.0, cells - 1.0)
    i0 = np.floor(u).astype(np.int64)
    i1 = np.minimum(i0 + 1, cells - 1)
    return i0, i1, u - i0


def logit(t):
    if t <= 0:
        return -math.inf
    if t >= 1:
        return math.inf
    return math.log(t / (1 - t))


def mask_of(box, coef, protos, transform, frame_size, input_size, threshold):
    sx, sy, ox, oy = transform
    fw, fh = frame_size
    iw, ih = input_size
    m, ph, pw = protos.shape
    x0 = min(max(math.floor(box[0]), 0), fw)
    y0 = min(max(math.floor(box[1]), 0), fh)
    x1 = min(max(math.ceil(box[2]), x0), fw)
    y1 = min(max(math.ceil(box[3]), y0), fh)
    w, h = x1 - x0, y1 - y0
    cells = np.tensordot(coef, protos, axes=1)  # [ph, pw]
    cx0, cx1, wx = taps(x0, w, sx, ox, pw / iw, pw)
    cy0, cy1, wy = taps(y0, h, sy, oy, ph / ih, ph)
    top = cells[cy0][:, cx0] * (1 - wx) + cells[cy0][:, cx1] * wx
    bottom = cells[cy1][:, cx0] * (1 - wx) + cells[cy1][:, cx1] * wx
    value = top * (1 - wy)[:, None] + bottom * wy[:, None]
    xs = np.arange(x0, x1) + 0.5
    ys = np.arange(y0, y1) + 0.5
    inside = ((ys >= box[1]) & (ys < box[3]))[:, None] & ((xs >= box[0]) & (xs < box[2]))[None, :]
    bits = (value > logit(threshold)) & inside
    return {"x": x0, "y": y0, "width": w, "height": h, "area": int(bits.sum()),
            "rle": rle(bits.reshape(-1))}


def rle(flat):
    runs, current, n = [], False, 0
    for b in flat:
        if bool(b) != current:
            runs.append(n)
            current, n = bool(b), 0
        n += 1
    runs.append(n)
    return runs


def bitmap(mask):
    """The mask's grid as a bool array [height, width] from its runs."""
    flat, value = [], False
    for r in mask["rle"]:
        flat += [value] * r
        value = not value
    return np.array(flat, dtype=bool).reshape(mask["height"], mask["width"])


def decode(head, protos, transform, frame_size, input_size, conf=0.25, iou_threshold=0.45,
           max_detections=100, threshold=0.5):
    head = np.asarray(head, dtype=np.float64)
    protos = np.asarray(protos, dtype=np.float64)
    m = protos.shape[0]
    classes = head.shape[0] - 4 - m
    sx, sy, ox, oy = transform
    fw, fh = frame_size
    out = []
    for s, a, cls, b in nms(candidates(head, classes, conf), iou_threshold):
        if len(out) >= max_detections:
            break
        box = (min(max((b[0] - ox) / sx, 0.0), fw), min(max((b[1] - oy) / sy, 0.0), fh),
               min(max((b[2] - ox) / sx, 0.0), fw), min(max((b[3] - oy) / sy, 0.0), fh))
        if not (box[2] > box[0] and box[3] > box[1]):
            continue
        coef = head[4 + classes:, a]
        out.append({"label_id": cls, "confidence": s, "anchor": a, "box": list(box),
                    "mask": mask_of(box, coef, protos, transform, frame_size, input_size,
                                    threshold)})
    return out
