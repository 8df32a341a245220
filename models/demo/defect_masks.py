#!/usr/bin/python3
"""Truth masks of the demo's defects, from the renderer's geometry.

make_frames.py draws a defect as a soft shape on the part; its truth mask is
the set of frame pixels (sampled where the renderer samples them: integer
x, y) where the drawing is at least half way:
  scratch       on the part's material and darkened to >= half the
                scratch's depth (distance to the segment <= width/2 + 0.6)
  spot          on the material, inside the spot's ellipse (darkening >=
                half its depth, e = 1)
  missing_hole  the disk the hole would have cut (hole alpha >= 0.5)
  chip          the material the bite removed: inside the washer's ring
                without the chip and inside the chip's circle
Masks are geometry only: blur, noise and the MJPEG coding change the
pixels, not the truth. Nothing here touches the renderer's output, so
rendering a clip with or without masks gives the same bytes.

Importable API (make_detection_clip.py, seg_data.py, eval_defect_seg.py):
  defect_mask(part)   (x0, y0, bool mask) of the part's defect clipped to the
                      frame, x0/y0 its top-left pixel; None when the part has
                      no defect or none of it is in view
  scene_masks(scene)  [(part index, class, x0, y0, mask)] for a scene
  encode_rle(mask) / decode_rle(rle, w, h)  row-major runs inside the box,
                      starting with a run of zeros (possibly 0)
  write_clip_masks(path, video, scenes, frame_objects, classes)  a clip's
                      mask file (line.masks.json)
  check_clip(masks, truth)  line.masks.json against the renderer and the
                      truth file; `defect_masks.py MASKS TRUTH` runs it (a
                      meson test: clip-truth-masks)
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_frames as mf  # noqa: E402


def _defect_field(part, u, v):
    """Boolean truth of the part's defect at part coordinates (u, v)."""
    p = part.defect_params
    if part.defect == "missing_hole":
        hu, hv, hr = part.holes[p["hole"]]
        return np.sqrt((u - hu) ** 2 + (v - hv) ** 2) <= hr
    if part.defect == "chip":
        cu, cv, rc = p["chip"]
        rr = np.sqrt(u * u + v * v)
        ring = np.maximum(rr - part.dims["r_out"], part.dims["r_in"] - rr) <= 0
        return ring & (np.sqrt((u - cu) ** 2 + (v - cv) ** 2) < rc)
    material = mf._part_sdf(part, u, v) <= 0  # alpha >= 0.5 in _draw_part
    if part.defect == "scratch":
        return material & (mf._sd_segment(u, v, p["p"], p["q"]) <= p["width"] / 2 + 0.6)
    if part.defect == "spot":
        cu, cv, ru, rv = p["ellipse"]
        return material & (((u - cu) / ru) ** 2 + ((v - cv) / rv) ** 2 <= 1.0)
    raise ValueError(f"unknown defect {part.defect!r}")


def defect_mask(part):
    if part.defect is None:
        return None
    ext = mf._extent(part) + 2
    x0, x1 = max(int(part.cx - ext), 0), min(int(part.cx + ext) + 1, mf.WIDTH)
    y0, y1 = max(int(part.cy - ext), 0), min(int(part.cy + ext) + 1, mf.HEIGHT)
    if x0 >= x1 or y0 >= y1:
        return None
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)  # as _draw_part samples
    u, v = mf._local_coords(part, xs, ys)
    mask = _defect_field(part, u, v)
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    if rows.size == 0:
        return None
    mask = mask[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    return x0 + int(cols[0]), y0 + int(rows[0]), mask


def scene_masks(scene):
    out = []
    for i, part in enumerate(scene.parts):
        m = defect_mask(part)
        if m is not None:
            out.append((i, part.defect) + m)
    return out


def paste(masks, width=mf.WIDTH, height=mf.HEIGHT):
    """Full-frame bool mask of one (x0, y0, mask)."""
    x0, y0, m = masks
    full = np.zeros((height, width), bool)
    full[y0:y0 + m.shape[0], x0:x0 + m.shape[1]] = m
    return full


def encode_rle(mask):
    flat = mask.reshape(-1).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flat, [0]])))
    runs = np.diff(np.concatenate([[0], edges]))
    if flat.size and flat[-1] == 0:  # the trailing zeros close the list
        runs = np.append(runs, flat.size - edges[-1] if edges.size else flat.size)
    return [int(r) for r in runs]


def decode_rle(rle, width, height):
    if sum(rle) != width * height or any(r < 0 for r in rle):
        raise ValueError(f"RLE of {sum(rle)} pixels does not fill a {width}x{height} box")
    flat = np.repeat(np.arange(len(rle)) % 2, rle).astype(bool)
    return flat.reshape(height, width)


def write_clip_masks(path, video, scenes, frame_objects, classes):
    """The clip's mask file: per frame, one entry per defect at least partly
    in view, with the truth file's class id and ignore flag for it."""
    frames, count = [], 0
    for t, (scene, objects) in enumerate(zip(scenes, frame_objects)):
        entries = []
        for part, cls, x0, y0, m in scene_masks(scene):
            obj = next((o for o in objects if o["part"] == part and o["class"] == cls), None)
            entries.append({"part": part, "class": cls, "class_id": classes.index(cls),
                            "ignore": True if obj is None else obj["ignore"],
                            "box": [x0, y0, m.shape[1], m.shape[0]], "area": int(m.sum()),
                            "rle": encode_rle(m)})
        count += len(entries)
        frames.append(json.dumps({"frame": t, "masks": entries}, separators=(",", ":")))
    head = {"video": video, "width": mf.WIDTH, "height": mf.HEIGHT, "classes": classes,
            "note": "per frame, each defect at least partly in view: part (truth file's part "
                    "id), class, ignore (as the truth file's defect object), box [x0, y0, w, h] "
                    "in frame pixels, area (pixels), rle: row-major runs inside the box, "
                    "zeros first (defect_masks.py: decode_rle; the rules are its docstring)"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "frames": [\n  ' + ",\n  ".join(frames) + "\n ]\n}\n"
    with open(path, "w") as f:
        f.write(text)
    return count


def self_test():
    rng = np.random.default_rng(0)
    for _ in range(50):
        m = rng.random((int(rng.integers(1, 9)), int(rng.integers(1, 9)))) < 0.5
        back = decode_rle(encode_rle(m), m.shape[1], m.shape[0])
        assert (back == m).all(), m
    for bad in ([3, 2], [-1, 7]):
        try:
            decode_rle(bad, 2, 3)
            raise AssertionError(f"decode_rle accepted {bad}")
        except ValueError:
            pass
    print("defect_masks: RLE round trip OK")


def check_clip(masks_path, truth_path):
    """line.masks.json against the renderer and line.truth.json: every mask
    as the clip's scenes give it now, exactly one mask for each truth defect
    in view, the same ignore flags; exact counts. Returns problems found."""
    import make_detection_clip as mdc
    data, truth = json.load(open(masks_path)), json.load(open(truth_path))
    parts = mdc.make_parts()
    problems, total, judged = [], 0, 0
    for t, (fm, ft) in enumerate(zip(data["frames"], truth["frames"])):
        fresh = {(p, c): (x0, y0, m) for p, c, x0, y0, m in scene_masks(mdc.frame_scene(parts, t))}
        for e in fm["masks"]:
            total += 1
            judged += not e["ignore"]
            x0, y0, w, h = e["box"]
            m = decode_rle(e["rle"], w, h)
            got = fresh.get((e["part"], e["class"]))
            if got is None or got[:2] != (x0, y0) or got[2].shape != m.shape or \
                    not (got[2] == m).all() or int(m.sum()) != e["area"]:
                problems.append(f"frame {t} part {e['part']}: mask differs from the renderer's")
        for o in ft["objects"]:
            if o["class"] in ("bracket", "washer") or o["ignore"]:
                continue
            hits = [e for e in fm["masks"] if e["part"] == o["part"] and e["class"] == o["class"]]
            if len(hits) != 1 or hits[0]["ignore"]:
                problems.append(f"frame {t} part {o['part']}: {len(hits)} masks for its {o['class']}")
    if len(data["frames"]) != 300 or (total, judged) != (440, 405):
        problems.append(f"{len(data['frames'])} frames, {total} masks, {judged} not ignored; "
                        f"expected 300, 440, 405")
    return problems


if __name__ == "__main__":
    self_test()
    if len(sys.argv) == 3:  # defect_masks.py line.masks.json line.truth.json
        found = check_clip(sys.argv[1], sys.argv[2])
        for p in found[:20]:
            print("error: " + p, file=sys.stderr)
        print(f"{sys.argv[1]}: {'OK' if not found else f'{len(found)} problems'}")
        sys.exit(1 if found else 0)
