"""Detection post-processing and mAP for models with YOLOv5-layout output.

Shared by quantize.py (--metric detection) and demo/eval_detector.py.

YOLOv5 layout: one tensor [N, A, 5 + C] per batch, each row cx, cy, w, h (model
input pixels), objectness, C class scores, both already sigmoid-activated.
Score of class c = objectness * score_c, as in YOLOv5's own NMS and the
plugin's yolov5 decoder.

mAP@0.5 here is PASCAL VOC 2010+ style: per class, detections of all frames
sorted by confidence, greedily matched to the unmatched ground-truth box of
that class with the highest IoU (>= 0.5) in the same frame; AP is the area
under the precision/recall curve with precision made monotone (all-point
interpolation, no 11-point sampling); mAP is the mean over classes that have
ground truth. Ground truth marked "ignore" (VOC's "difficult") is not counted
as a positive, and a detection matching it is neither a true nor a false
positive.
"""
import numpy as np
import torch
import torchvision


def decode(out, conf_threshold=0.001, iou_threshold=0.45, max_det=300, class_agnostic=False,
           multi_label=False):
    """[A, 5+C] tensor of one frame -> list of (x0, y0, x1, y1, score, class)
    in model-input pixels, after per-class NMS (torchvision batched_nms).
    Each anchor proposes its best class only, as the plugin's yolov5 decoder
    and YOLOv5's detect.py do; multi_label=True proposes every (box, class)
    pair above the threshold (YOLOv5's val.py)."""
    out = out.float()
    scores = out[:, 5:] * out[:, 4:5]
    if multi_label:
        idx, cls = (scores >= conf_threshold).nonzero(as_tuple=True)
    else:
        best, cls = scores.max(1)
        idx = (best >= conf_threshold).nonzero(as_tuple=True)[0]
        cls = cls[idx]
    if idx.numel() == 0:
        return []
    cx, cy, w, h = out[idx, 0], out[idx, 1], out[idx, 2], out[idx, 3]
    boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
    sc = scores[idx, cls]
    keep = torchvision.ops.batched_nms(boxes, sc, torch.zeros_like(cls) if class_agnostic else cls,
                                       iou_threshold)[:max_det]
    return [(*boxes[k].tolist(), float(sc[k]), int(cls[k])) for k in keep.tolist()]


def _iou(box, boxes):
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def average_precision(detections, truths, num_classes, iou_threshold=0.5):
    """detections: per frame a list of (x0, y0, x1, y1, score, class);
    truths: per frame a list of (x0, y0, x1, y1, class, ignore), same units.
    Returns (mAP, [AP per class or None when the class has no ground truth],
    [positives per class])."""
    aps, npos_all = [], []
    for c in range(num_classes):
        gts, npos = [], 0
        for t in truths:
            g = [x for x in t if x[4] == c]
            gts.append((np.array([x[:4] for x in g], np.float64).reshape(-1, 4),
                        np.array([bool(x[5]) for x in g]), np.zeros(len(g), bool)))
            npos += sum(1 for x in g if not x[5])
        dets = sorted(((d[4], f, d[:4]) for f, fd in enumerate(detections) for d in fd if d[5] == c),
                      key=lambda d: -d[0])
        tp, fp = [], []
        for _, f, box in dets:
            boxes, ignore, used = gts[f]
            if len(boxes):
                ious = _iou(np.asarray(box, np.float64), boxes)
                ious[used & ~ignore] = -1  # a matched real box cannot match again
                j = int(ious.argmax())
                if ious[j] >= iou_threshold:
                    if ignore[j]:
                        continue
                    used[j] = True
                    tp.append(1), fp.append(0)
                    continue
            tp.append(0), fp.append(1)
        npos_all.append(npos)
        if npos == 0:
            aps.append(None)
            continue
        tp, fp = np.cumsum(tp), np.cumsum(fp)
        recall = tp / npos
        precision = tp / np.maximum(tp + fp, 1e-9)
        mrec = np.concatenate([[0.0], recall, [1.0]])
        mpre = np.concatenate([[0.0], precision, [0.0]])
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        i = np.nonzero(mrec[1:] != mrec[:-1])[0]
        aps.append(float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])))
    valid = [a for a in aps if a is not None]
    return (float(np.mean(valid)) if valid else 0.0), aps, npos_all


def model_map(model, x, truths, num_classes, batch=16, conf_threshold=0.001, iou_threshold=0.45):
    """mAP@0.5 of `model` on preprocessed frames x [N, 3, H, W] against truths
    in model-input pixels; also returns the raw outputs."""
    outs = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            outs.append(model(x[i:i + batch]).float())
    out = torch.cat(outs)
    w, h = x.shape[3], x.shape[2]
    dets = [[(min(max(x0, 0.0), w), min(max(y0, 0.0), h), min(max(x1, 0.0), w),
              min(max(y1, 0.0), h), s, c)  # boxes end at the image edge, as in the plugin
             for x0, y0, x1, y1, s, c in decode(o, conf_threshold, iou_threshold)] for o in out]
    m, aps, npos = average_precision(dets, truths, num_classes)
    return m, aps, npos, out
