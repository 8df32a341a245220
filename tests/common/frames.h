// Synthetic test frames with realistic content (smooth gradients and shapes,
// so YUV-domain resizing is compared on in-gamut colours like a camera's).
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

#include "preprocess/frame.h"

namespace torchinfer::test {

// Packed RGB image, deterministic for a given seed.
cv::Mat make_rgb_image(int width, int height, unsigned seed);

// A frame buffer in `format` made from an RGB image, rows padded to `stride`
// bytes (0 = tight). YUV is BT.601 limited range.
struct OwnedFrame {
  std::vector<std::uint8_t> bytes;
  FrameView view;
};
OwnedFrame make_frame(const cv::Mat& rgb, PixelFormat format, int stride = 0);

// The straightforward reference chain: convert to RGB at full size with
// OpenCV, resize, then normalise into NHWC floats.
std::vector<float> reference_preprocess(const OwnedFrame& f, int out_w, int out_h,
                                        int interpolation, bool rgb_order, const float alpha[3],
                                        const float beta[3]);

}  // namespace torchinfer::test
