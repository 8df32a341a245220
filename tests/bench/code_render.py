"""Rendered test symbols for the code-reading benchmarks (codes_hard.py,
codes_vs_zxing.py): zxing-cpp's writer (python3-zxing-cpp) for the modules,
then what a camera does to them: module size, rotation, contrast, blur,
noise; and the frames laid out as the camera formats torchcodes reads.
Deterministic for a given seed."""
import cv2
import numpy as np
from PIL import Image

import zxingcpp

FORMATS = {"DataMatrix": zxingcpp.BarcodeFormat.DataMatrix,
           "QRCode": zxingcpp.BarcodeFormat.QRCode,
           "Code128": zxingcpp.BarcodeFormat.Code128}
QUIET = {"DataMatrix": 2, "QRCode": 4, "Code128": 10}  # quiet zone, modules


def modules(fmt, text):
    """The symbol's modules, True = dark; a 1D code is 40 modules tall."""
    m = np.asarray(zxingcpp.write_barcode(FORMATS[fmt], text, 0, 0, 0, -1)) < 128
    return np.repeat(m, 40, axis=0) if fmt == "Code128" else m


def symbol_patch(fmt, text, module, angle, contrast):
    """A float32 patch of factors on the surface it is marked on: the
    symbol with its quiet zone, `module` px a module (any real number:
    sampled), turned `angle` degrees; a dark module darkens the surface by
    `contrast` (0..1), the rest is 1; NaN outside the symbol's square."""
    m = modules(fmt, text)
    q = QUIET[fmt]
    m = np.pad(m, q, constant_values=False)
    h, w = m.shape
    scale = 8  # modules drawn large, then resampled: module may be fractional
    big = np.where(np.kron(m, np.ones((scale, scale), bool)), 1.0 - contrast, 1.0)
    img = Image.fromarray(big.astype(np.float32), mode="F")
    img = img.resize((max(1, round(w * module)), max(1, round(h * module))), Image.BILINEAR)
    mask = Image.new("F", img.size, 1.0)
    img = img.rotate(angle, resample=Image.BILINEAR, expand=True, fillcolor=0.0)
    mask = mask.rotate(angle, resample=Image.BILINEAR, expand=True, fillcolor=0.0)
    out, a = np.asarray(img, np.float32), np.asarray(mask, np.float32)
    return np.where(a > 0.5, out / np.maximum(a, 1e-6), np.nan)


def scene(width, height, seed, light=200):
    """A textured light background (a part's surface): smooth shading plus
    fine grain."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    shade = 1 + 0.08 * np.sin(xs / 97 + rng.uniform(0, 6)) * np.cos(ys / 71 + rng.uniform(0, 6))
    return light * shade * (1 + 0.02 * rng.standard_normal((height, width)).astype(np.float32))


def place(canvas, patch, cx, cy):
    """Marks `patch` (symbol_patch) centred at (cx, cy) on the canvas.
    Returns the patch's box [x0, y0, x1, y1] (clipped)."""
    ph, pw = patch.shape
    x0, y0 = int(round(cx - pw / 2)), int(round(cy - ph / 2))
    sx0, sy0 = max(0, -x0), max(0, -y0)
    x1, y1 = min(canvas.shape[1], x0 + pw), min(canvas.shape[0], y0 + ph)
    region = canvas[max(0, y0):y1, max(0, x0):x1]
    p = patch[sy0:sy0 + region.shape[0], sx0:sx0 + region.shape[1]]
    region *= np.where(np.isnan(p), 1.0, p)
    return [max(0, x0), max(0, y0), x1, y1]


def finish(canvas, blur, noise, seed):
    """Gaussian blur (sigma px), sensor noise (sigma grey levels), 8 bits."""
    img = canvas
    if blur > 0:
        img = cv2.GaussianBlur(img, (0, 0), blur)
    img = img + noise * np.random.default_rng(seed).standard_normal(img.shape).astype(np.float32)
    return np.clip(img + 0.5, 0, 255).astype(np.uint8)


def to_yuy2(grey):
    """Y0 U Y1 V with neutral chroma (the luma is the image)."""
    h, w = grey.shape
    out = np.full((h, w * 2), 128, np.uint8)
    out[:, 0::2] = grey
    return out
