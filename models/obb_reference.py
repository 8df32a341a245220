#!/usr/bin/python3
"""Reference decoder for the YOLOv8-obb output layout, written for torchinfer's
tests (not derived from Ultralytics' code): what torchnms decoder=yolov8-obb
must give, in plain numpy and Python.

Layout: one tensor [1, 4 + C + 1, A]: cx, cy, w, h (model-input pixels), C
class scores, the angle in radians. Each anchor keeps its best class
(ties: the lower id); anchors scoring below the threshold, or with a
non-finite or empty box, are dropped. Greedy NMS by score (ties: lower
anchor first), per class unless class_agnostic, with the exact IoU of the
two rotated rectangles (polygon clipping); stops at max_detections.
Boxes map to the frame with model = frame * scale + offset; the result's
angle is in degrees, clockwise in image coordinates, in [-90, 90).

Importable: decode(out, conf, iou, max_det, scale, offset, frame_size,
class_agnostic=False) -> [dict(label_id, confidence, cx, cy, width,
height, angle)], rotated_iou(a, b), polygon(box).
"""
import math

import numpy as np


def normalize_angle(deg):
    a = math.fmod(deg + 90.0, 180.0)
    if a < 0:
        a += 180.0
    if a >= 180.0:
        a = 0.0
    return a - 90.0


def polygon(b):
    """Corners of (cx, cy, w, h, angle_deg), in order around the box."""
    cx, cy, w, h, ang = b
    a = math.radians(ang)
    c, s = math.cos(a), math.sin(a)
    ux, uy = c * w / 2, s * w / 2
    vx, vy = -s * h / 2, c * h / 2
    return [(cx - ux - vx, cy - uy - vy), (cx + ux - vx, cy + uy - vy),
            (cx + ux + vx, cy + uy + vy), (cx - ux + vx, cy - uy + vy)]


def _area(p):
    return abs(sum(p[i][0] * p[(i + 1) % len(p)][1] - p[(i + 1) % len(p)][0] * p[i][1]
                   for i in range(len(p)))) / 2


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _clip(subject, clip):
    sign = 1 if sum(_cross(clip[0], clip[i], clip[(i + 1) % 4]) for i in range(4)) >= 0 else -1
    for e in range(4):
        a, b = clip[e], clip[(e + 1) % 4]
        out = []
        for i in range(len(subject)):
            p, q = subject[i], subject[(i + 1) % len(subject)]
            dp, dq = sign * _cross(a, b, p), sign * _cross(a, b, q)
            if dp >= 0:
                out.append(p)
            if (dp >= 0) != (dq >= 0):
                t = dp / (dp - dq)
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
        subject = out
        if not subject:
            break
    return subject


def rotated_iou(a, b):
    inter = _area(_clip(polygon(a), polygon(b)))
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if inter > 0 and union > 0 else 0.0


def to_frame(b, scale, offset):
    """A model-input box (angle in degrees) mapped to the frame: the centre
    exactly, the width axis gives angle and width, the area gives height."""
    cx, cy, w, h, ang = b
    a = math.radians(ang)
    ux, uy = math.cos(a) * w / scale[0], math.sin(a) * w / scale[1]
    vx, vy = -math.sin(a) * h / scale[0], math.cos(a) * h / scale[1]
    fw = math.hypot(ux, uy)
    return ((cx - offset[0]) / scale[0], (cy - offset[1]) / scale[1], fw,
            abs(ux * vy - uy * vx) / fw, normalize_angle(math.degrees(math.atan2(uy, ux))))


def candidates(out, conf):
    """[(score, anchor, class, (cx, cy, w, h, angle_deg))] above conf."""
    out = np.asarray(out, np.float64).reshape(out.shape[-2], out.shape[-1])
    nc = out.shape[0] - 5
    scores = out[4:4 + nc]
    best = scores.argmax(axis=0)
    res = []
    for a in range(out.shape[1]):
        s = scores[best[a], a]
        cx, cy, w, h, rad = out[0, a], out[1, a], out[2, a], out[3, a], out[-1, a]
        if not (s >= conf and s > 0):
            continue
        if not all(math.isfinite(v) for v in (cx, cy, w, h, rad)) or not (w > 0 and h > 0):
            continue
        res.append((float(s), a, int(best[a]),
                    (cx, cy, w, h, normalize_angle(math.degrees(rad)))))
    res.sort(key=lambda c: (-c[0], c[1]))
    return res


def bounds(b):
    a = math.radians(b[4])
    hw = (abs(math.cos(a)) * b[2] + abs(math.sin(a)) * b[3]) / 2
    hh = (abs(math.sin(a)) * b[2] + abs(math.cos(a)) * b[3]) / 2
    return (b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh)


def decode(out, conf, iou, max_det, scale, offset, frame_size, class_agnostic=False):
    kept, dets = [], []
    for s, _, cls, box in candidates(out, conf):
        if len(dets) >= max_det:
            break
        if any((class_agnostic or k[1] == cls) and rotated_iou(k[0], box) > iou for k in kept):
            continue
        kept.append((box, cls))
        f = to_frame(box, scale, offset)
        x0, y0, x1, y1 = bounds(f)
        if not (x0 < frame_size[0] and x1 > 0 and y0 < frame_size[1] and y1 > 0):
            continue
        dets.append(dict(label_id=cls, confidence=s, cx=f[0], cy=f[1], width=f[2], height=f[3],
                         angle=f[4]))
    return dets
