// Synthetic test frames with realistic content (smooth gradients and shapes,
// slightly blurred like camera optics) in every pixel format, and the
// straightforward reference chain the fused preprocessor is checked against.
#pragma once

#include <cstdint>
#include <functional>
#include <opencv2/core.hpp>
#include <vector>

#include "preprocess/frame.h"
#include "preprocess/preprocess.h"

namespace torchinfer::test {

// Packed RGB image, deterministic for a given seed.
cv::Mat make_rgb_image(int width, int height, unsigned seed);

// A frame in `format` made from an RGB image (YUV: BT.601 limited range,
// chroma averaged over its 2x1 or 2x2 block; Bayer: each pixel keeps its
// site's colour; GRAY16_LE: BT.601 luma x 257), each plane's rows padded to
// at least `stride` bytes (0 = tight) and filled with junk past the row.
struct OwnedFrame {
  std::vector<std::uint8_t> bytes;
  FrameView view;
};
OwnedFrame make_frame(const cv::Mat& rgb, PixelFormat format, int stride = 0);

// A GRAY16_LE frame of exact sample values value(x, y), rows `stride`
// bytes apart (0: 2 * width + 6, not tightly packed), junk past each row.
OwnedFrame make_gray16(int width, int height, const std::function<int(int, int)>& value,
                       int stride = 0);

// Full-resolution 8-bit RGB of a frame, as a capture app would make it first
// (for YUV, the standard BT.601 conversion with chroma replicated, which is
// what cv::cvtColor does; it also handles odd sizes).
cv::Mat reference_rgb(const FrameView& f);

// Reference chain (Bayer: from the RGB the mosaic was made from, over the
// region of whole 2x2 cells the preprocessor reads): reference_rgb -> resize (area when shrinking,
// linear when growing, per axis, in float) -> normalise; NHWC floats in `o`'s layout.
std::vector<float> reference_preprocess(const FrameView& f, const PreprocessOptions& o);
// Same, from an already converted reference_rgb(f) (saves time in big tests).
std::vector<float> reference_preprocess(const cv::Mat& rgb, PixelFormat format,
                                        const PreprocessOptions& o);

}  // namespace torchinfer::test
