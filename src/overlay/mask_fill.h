// Instance masks on video (torchoverlay): each set pixel of a detection's
// mask blended with its class colour, in the frame's own pixel format.
#pragma once

#include "decode/yolov8_seg.h"
#include "overlay/draw.h"

namespace torchinfer {

// Blends `colour` with weight alpha into every pixel of the frame the mask
// sets (pixels outside the frame are skipped). YUV: luma per set pixel,
// chroma per chroma sample whose first pixel is set (as heat maps do).
// Runs that do not cover the mask's grid draw nothing.
void fill_mask(const Mask& mask, Rgb colour, double alpha, OverlayImage& image);

}  // namespace torchinfer
