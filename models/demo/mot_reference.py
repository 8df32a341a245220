#!/usr/bin/python3
"""Independent Python reference for the tracking scores of pipelines/eval/mot_metrics.h.

CLEAR-MOT (MOTA, MOTP as mean IoU, id switches) and IDF1 with the
definitions of py-motmetrics (not installed here), matching with scipy's
Hungarian method instead of the C++ one. Running it prints the figures that
tests/unit/test_mot_metrics.cpp (MixedSequenceMatchesReference, SwappedIds,
KeepsCorrespondenceWhileValid) asserts, so the C++ code is checked against
a second implementation rather than against itself.

    /usr/bin/python3 models/demo/mot_reference.py
"""
import numpy as np
from scipy.optimize import linear_sum_assignment

def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0]); h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0: return 0.0
    i = w * h
    return i / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - i)

def assign(T, H, thr):
    if not T or not H: return []
    c = np.full((len(T), len(H)), 1e9)
    for i, t in enumerate(T):
        for j, h in enumerate(H):
            v = iou(t, h)
            if v >= thr: c[i, j] = 1 - v
    r, k = linear_sum_assignment(c)
    return [(a, b) for a, b in zip(r, k) if c[a, b] < 1e9]

def evaluate(truth, tracks, thr=0.5):
    """truth[f] = [(id, box, ignore)], tracks[f] = [(id, box)]"""
    m = {}; gt = fp = fn = sw = nm = 0; ious = []
    tlen, hlen, ov = {}, {}, {}
    for T, H in zip(truth, tracks):
        pairs = assign([t[1] for t in T], [h[1] for h in H], thr)
        drop = {j for i, j in pairs if T[i][2]}
        H = [h for j, h in enumerate(H) if j not in drop]
        T = [t for t in T if not t[2]]
        gt += len(T)
        for t in T: tlen[t[0]] = tlen.get(t[0], 0) + 1
        for h in H: hlen[h[0]] = hlen.get(h[0], 0) + 1
        for t in T:
            for h in H:
                if iou(t[1], h[1]) >= thr: ov[(t[0], h[0])] = ov.get((t[0], h[0]), 0) + 1
        matched = {}
        for i, t in enumerate(T):
            if t[0] in m:
                for j, h in enumerate(H):
                    if h[0] == m[t[0]] and j not in matched.values() and iou(t[1], h[1]) >= thr:
                        matched[i] = j
        ri = [i for i in range(len(T)) if i not in matched]
        cj = [j for j in range(len(H)) if j not in matched.values()]
        for a, b in assign([T[i][1] for i in ri], [H[j][1] for j in cj], thr):
            i, j = ri[a], cj[b]
            if T[i][0] in m and m[T[i][0]] != H[j][0]: sw += 1
            matched[i] = j
        for i, j in matched.items():
            m[T[i][0]] = H[j][0]; ious.append(iou(T[i][1], H[j][1]))
        nm += len(matched); fn += len(T) - len(matched); fp += len(H) - len(matched)
    tids, hids = sorted(tlen), sorted(hlen)
    idtp = 0
    if tids and hids:
        c = np.zeros((len(tids), len(hids)))
        for (t, h), n in ov.items(): c[tids.index(t), hids.index(h)] = -n
        r, k = linear_sum_assignment(c)
        idtp = int(-c[r, k].sum())
    nh = sum(hlen.values())
    return dict(gt=gt, hyp=nh, matches=nm, misses=fn, fp=fp, switches=sw,
                mota=1 - (fn + fp + sw) / gt if gt else float('nan'),
                motp=float(np.mean(ious)) if ious else float('nan'),
                idtp=idtp, idf1=2 * idtp / (gt + nh), truth_ids=len(tids), track_ids=len(hids))

def at(x): return (x, 0, x + 10, 10)

if __name__ == "__main__":
    C = at(200)
    truth, tracks = [], []
    for f in range(6):
        T = [(1, at(f * 2), False), (2, at(100 + f * 2), False)]
        if f >= 3: T.append((3, C, f < 5))
        H = []
        if f != 1: H.append((10, at(f * 2 + 1)))
        H.append((20 if f < 3 else 21, at(100 + f * 2)))
        if f >= 4: H.append((30, C))
        if f == 2: H.append((40, at(300)))
        truth.append(T); tracks.append(H)
    print("mixed", evaluate(truth, tracks))
    # swapped ids
    A, B = at(0), at(100)
    print("swapped", evaluate([[(1, A, False), (2, B, False)]] * 4,
                              [[(10, A), (20, B)]] * 2 + [[(20, A), (10, B)]] * 2))
    print("keep", evaluate([[(1, A, False)]] * 2, [[(10, A)], [(10, at(2)), (11, A)]]))
