// Deskewed crops (inference-region=roi-list on rotated boxes, torchnms
// decoder=yolov8-obb): the rotated box is resampled upright into the slot,
// straight from the camera's own format, in the same single pass as the
// axis-aligned crops (no full-frame copy, no intermediate image).
//
// Output pixel (u, v) of a new_w x new_h area takes the frame point
//   centre + bu * (cos a, sin a) + bv * (-sin a, cos a),
//   bu = ((u + 0.5) / new_w - 0.5) * width, bv = ((v + 0.5) / new_h - 0.5) * height
// (a: the box's angle, clockwise in image coordinates), so the box's width
// axis runs left to right and its height axis top to bottom: a box at +30
// degrees comes out turned back by 30 degrees. Each colour component is
// sampled bilinearly on its own grid (pixel centres at +0.5; chroma at
// the centre of the luma samples it covers; a Bayer colour on its own
// lattice, G the mean of its two) with points outside the frame taking the
// nearest edge sample; where the box shrinks by more than 1 on an axis,
// n x n samples per output pixel are averaged (n = ceil of the larger
// shrink, at most 4), an area filter's stand-in. Colour conversion,
// channel order and normalisation are the axis-aligned path's
// (row_output.h). Letterbox (keep_aspect_ratio) fits the box into the
// output and pads; center_crop cuts the box to the output's aspect ratio
// around its centre; stretch fills the output. Angles that are multiples
// of 90 degrees use exact sines, so such crops are pixel-exact at scale 1.
#pragma once

#include <cstdint>

#include "common/rotated_box.h"
#include "preprocess/frame.h"
#include "preprocess/preprocess.h"
#include "preprocess/saturation.h"

namespace torchinfer {

// Rows [row_begin, row_end) of one slot. The returned transform maps the
// box's centre to the output's centre at out/box scale; it is no exact
// frame mapping for a turned box (documented in docs/elements.md). The
// frame's planes must have been checked (Preprocessor does it).
template <typename Out>
FrameTransform deskew_rows(const PreprocessOptions& o, const FrameView& f, const RotatedBox& box,
                           Out* dst, int row_begin, int row_end, Saturation& sat);

}  // namespace torchinfer
