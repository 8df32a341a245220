#!/usr/bin/python3
"""Print the detections torchnms attaches, read from Python through GI.

Usage (from the repository root, after building):
  GST_PLUGIN_PATH=$PWD/build/plugin pipelines/read_detections.py MODEL.pt [SOURCE]

SOURCE is a gst-launch fragment ending in raw video (default: 30 frames of
videotestsrc). Prints one line per detection, then a summary line: frames,
detections per class. Each detection is a GstVideoRegionOfInterestMeta whose
"detection" param holds label, label_id, confidence and the box normalised
to the frame (x_min, y_min, x_max, y_max); ROI ids are 0, 1, ... per frame.
Needs Debian's python3-gi, gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402


def detections(buf):
    """The frame's detections, best first, as dicts (box normalised 0..1)."""
    out = []
    roi_id = 0
    while True:
        roi = GstVideo.buffer_get_video_region_of_interest_meta_id(buf, roi_id)
        if roi is None:
            return out
        s = roi.get_param("detection")
        if s is not None:
            out.append({
                "label": s.get_string("label"),
                "label_id": s.get_int("label_id")[1],
                "confidence": s.get_double("confidence")[1],
                "box": [s.get_double(k)[1] for k in ("x_min", "y_min", "x_max", "y_max")],
                "pixels": (roi.x, roi.y, roi.w, roi.h),
            })
        roi_id += 1


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    Gst.init(None)
    source = argv[2] if len(argv) > 2 else (
        "videotestsrc num-buffers=30 ! video/x-raw,format=YUY2,width=640,height=480")
    pipeline = Gst.parse_launch(
        f"{source} ! torchinfer model={argv[1]} ! torchnms name=nms ! fakesink")
    frame = [0]
    per_class = {}

    def on_buffer(pad, info):
        buf = info.get_buffer()
        for d in detections(buf):
            per_class[d["label"]] = per_class.get(d["label"], 0) + 1
            x0, y0, x1, y1 = d["box"]
            print(f"frame {frame[0]}: {d['label']} ({d['label_id']}) {d['confidence']:.3f} "
                  f"box {x0:.4f},{y0:.4f}-{x1:.4f},{y1:.4f} pixels {d['pixels']}")
        frame[0] += 1
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("nms").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, on_buffer)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(
        Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        print(f"error: {err.message}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{k} {v}" for k, v in sorted(per_class.items()))
    print(f"summary: {frame[0]} frames, {sum(per_class.values())} detections"
          + (f": {counts}" if counts else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
