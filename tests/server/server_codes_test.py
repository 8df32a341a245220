#!/usr/bin/python3
"""torchinfer-server's per-camera "codes" (docs/server.md, "Codes") on a
clip made here: 35 frames, 640x480, DataMatrix symbols rendered by
zxing-cpp's own writer (python3-zxing-cpp), 10 frames each of SN-0001,
SN-0002, SN-0003, then 5 blank frames; MJPEG in Matroska like the demo
clip. Exits 1 with what was wrong.

  read    one camera reads every frame whole ("full_frame": "always"):
          exactly 30 views read, 5 failed, 35 tried; the codes' texts in
          order of reading in GET /streams/{id} ("recent") and the same
          counts in /metrics (torchinfer_codes_*); a second camera on the
          same clip with "formats": "QRCode" reads none of them (35 failed).
  config  bad "codes" bodies refused with 400 naming the field.

Usage: server_codes_test.py CASE  (env: TORCHINFER_SERVER, TORCHINFER_SOURCE_ROOT)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import zxingcpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_proc import Server, metric, promtool_problems, refusal_problem  # noqa: E402

WIDTH, HEIGHT, MODULE = 640, 480, 8
TEXTS = ["SN-0001", "SN-0002", "SN-0003"]


def fail(why):
    sys.exit("server_codes_test: " + why)


def make_clip(work):
    frames = []
    for text in TEXTS + [None]:
        canvas = np.full((HEIGHT, WIDTH), 255, np.uint8)
        if text:
            sym = np.asarray(zxingcpp.write_barcode(zxingcpp.BarcodeFormat.DataMatrix, text, 0, 0))
            sym = np.kron(sym, np.ones((MODULE, MODULE), np.uint8))
            y, x = 160, 240 + 40 * TEXTS.index(text)
            canvas[y:y + sym.shape[0], x:x + sym.shape[1]] = sym
        frames += [canvas] * (10 if text else 5)
    raw = os.path.join(work, "frames.gray")
    with open(raw, "wb") as f:
        for fr in frames:
            f.write(fr.tobytes())
    clip = os.path.join(work, "codes.mkv")
    subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={raw}", "!", "rawvideoparse",
                    "format=gray8", f"width={WIDTH}", f"height={HEIGHT}", "framerate=10/1", "!",
                    "videoconvert", "!", "jpegenc", "quality=95", "!", "matroskamux", "!",
                    "filesink", f"location={clip}"], check=True, timeout=60)
    return clip, len(frames)


def camera(cid, clip, **codes):
    return {"id": cid, "uri": "file://" + clip, "model": "parts", "loop": False, "json": False,
            "codes": dict({"full_frame": "always"}, **codes)}


def read(work):
    clip, n = make_clip(work)
    server = Server(work)
    try:
        for body in (camera("dm", clip, formats="DataMatrix"), camera("qr", clip, formats="QRCode")):
            status, text = server.call("POST", "/streams", body)
            if status != 201:
                fail(f"POST /streams: {status} {text}")
        server.wait(lambda: all(server.json(f"/streams/{c}")["state"] == "ended"
                                for c in ("dm", "qr")), 120, "the clip did not end")
        dm, qr = server.json("/streams/dm")["codes"], server.json("/streams/qr")["codes"]
        text = server.call("GET", "/metrics")[1]
    finally:
        server.close()
    counts = {k: dm[k] for k in ("read", "failed", "tried", "late")}
    if counts != {"read": 30, "failed": n - 30, "tried": n, "late": 0}:
        fail(f"DataMatrix camera counts {counts}")
    if [c["text"] for c in dm["recent"]] != TEXTS or any(c["format"] != "DataMatrix"
                                                          for c in dm["recent"]):
        fail(f"recent codes {dm['recent']}")
    if [c["text"] for c in dm["latest"]] != ["SN-0003"]:
        fail(f"latest codes {dm['latest']}")
    if (qr["read"], qr["failed"], qr["recent"]) != (0, n, []):
        fail(f"QRCode camera {qr}")
    want = {"read_total": 30, "failed_total": n - 30, "tried_total": n}
    got = {k: metric(text, "torchinfer_codes_" + k, 'stream="dm"') for k in want}
    if got != want:
        fail(f"/metrics {got}, want {want}")
    if promtool_problems(text):
        fail(f"promtool check metrics: {promtool_problems(text)}")
    seconds = metric(text, "torchinfer_codes_read_seconds_total", 'stream="dm"')
    if not seconds or seconds != dm["read_seconds"]:  # both read after the clip ended
        fail(f"/metrics read seconds {seconds}, status {dm['read_seconds']}")
    print(f"read: {TEXTS} read in {dm['read']} of {n} frames "
          f"({1e3 * seconds / n:.2f} ms a frame on the streaming thread); QRCode only: none")


def refused(server, body, field, *words):
    why = refusal_problem(server, body, field, *words)
    if why:
        fail(why)


def config(work):
    server = Server(work)
    clip = "/nonexistent.mkv"  # refused before the file is looked at
    try:
        cases = [
            (camera("c", clip, formats="DataMatrx"), "codes.formats", "not a valid barcode format"),
            (camera("c", clip, padding=2), "codes.padding", "from 0 to 1"),
            (camera("c", clip, workers=65), "codes.workers", "from 0 to 64"),
            (camera("c", clip, budget_ms=-1), "codes.budget_ms", "from 0 to 10000"),
            (camera("c", clip, full_frame="sometimes"), "codes.full_frame", "no-roi"),
            (camera("c", clip, classes=["a,b"]), "codes.classes", "without ','"),
            (camera("c", clip, enable="yes"), "codes.enable", "true or false"),
            (camera("c", clip, reread=3), "codes.reread", "unknown field"),
            (dict(camera("c", clip), codes=["DataMatrix"]), "codes", "must be an object"),
            ({k: v for k, v in camera("c", clip).items() if k != "loop"} | {"uri": "aravis://Fake"},
             "codes", "aravis://"),
        ]
        for body, field, *words in cases:
            refused(server, body, field, *words)
        if server.json("/streams")["streams"] != []:
            fail(f"a refused camera was added: {server.json('/streams')}")
    finally:
        server.close()
    print(f"config: {len(cases)} bad bodies refused naming the field")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"read": read, "config": config}
    if case not in cases:
        fail("give " + ", ".join(cases))
    with tempfile.TemporaryDirectory(prefix="server-codes-") as work:
        cases[case](work)


if __name__ == "__main__":
    main()
