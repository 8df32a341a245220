#!/usr/bin/python3
"""Baseline (b) of tests/bench/compare.sh: the Python application users write
first. Deliberately naive -- it is what torchinfer is measured against:
OpenCV capture from a GStreamer pipeline (BGR from appsink), cv2.resize,
cvtColor, numpy normalisation, the TorchScript file loaded with torch.jit.load
and run as is (no freeze, no optimize_for_inference), batch 1.

  naive_app.py MODEL.pt WxH FRAMES LIVE(0|1) [PATTERN (videotestsrc, default ball)]

Prints one line: key=value fps, p50/p99 end-to-end latency (ms), CPU ms per
frame, peak RSS (KiB). Latency of frame i = result time - capture time, the
capture time being the first frame's read time + (pts_i - pts_0): the source
is live, so buffers are produced on their timestamps.
"""
import json
import os
import resource
import sys
import time

import cv2
import numpy as np
import torch


def main():
    model_path, size, frames, live = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    pattern = sys.argv[5] if len(sys.argv) > 5 else "ball"
    w, h = (int(v) for v in size.split("x"))
    side = json.load(open(os.path.splitext(model_path)[0] + ".json"))
    in_w, in_h = side.get("input_width", 224), side.get("input_height", 224)
    mean = np.array(side.get("mean", [0.485, 0.456, 0.406]), dtype=np.float32)
    std = np.array(side.get("std", [0.229, 0.224, 0.225]), dtype=np.float32)
    if "onednn" in torch.backends.quantized.supported_engines:
        torch.backends.quantized.engine = "onednn"  # int8 files need it; fp32 ignores it

    model = torch.jit.load(model_path)
    model.eval()
    src = (f"videotestsrc num-buffers={frames} is-live={'true' if live else 'false'} pattern={pattern}"
           f" ! video/x-raw,format=YUY2,width={w},height={h},framerate=30/1"
           " ! videoconvert ! video/x-raw,format=BGR ! appsink")
    cap = cv2.VideoCapture(src, cv2.CAP_GSTREAMER)
    if not cap.isOpened():
        sys.exit("naive_app.py: cannot open the GStreamer source (OpenCV without GStreamer?)")

    lat, pts0, t_first, n = [], None, None, 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    with torch.no_grad():
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            now = time.perf_counter()
            pts = cap.get(cv2.CAP_PROP_POS_MSEC)
            if pts0 is None:
                pts0, t_first = pts, now
            x = cv2.resize(frame, (in_w, in_h))
            x = cv2.cvtColor(x, cv2.COLOR_BGR2RGB).astype(np.float32) / 255.0
            x = (x - mean) / std
            out = model(torch.from_numpy(x).permute(2, 0, 1)[None])
            if isinstance(out, (tuple, list)):
                out = out[0]
            out.argmax()
            done = time.perf_counter()
            lat.append((done - (t_first + (pts - pts0) / 1000.0)) * 1000.0)
            n += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(p * (len(lat) - 1) + 0.5))] if lat else 0.0
    print(f"frames={n} fps={n / wall:.3f} p50={pct(0.5):.3f} p99={pct(0.99):.3f} "
          f"cpu_ms={1000.0 * cpu / max(n, 1):.3f} "
          f"rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")


if __name__ == "__main__":
    main()
