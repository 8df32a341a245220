// A camera frame as the core sees it: plane pointers and strides exactly as
// GStreamer maps them (never assume tight packing), plus colorimetry. Planes
// are in GStreamer's order for the format (YV12: Y, V, U).
#pragma once

#include <cstdint>

#include "preprocess/pixel_format.h"

namespace torchinfer {

enum class YuvMatrix { kBT601, kBT709, kBT2020 };

struct FrameView {
  PixelFormat format = PixelFormat::kRGB;
  int width = 0;
  int height = 0;
  const std::uint8_t* planes[3] = {nullptr, nullptr, nullptr};
  int strides[3] = {0, 0, 0};
  YuvMatrix matrix = YuvMatrix::kBT601;
  bool full_range = false;  // YUV only: 0..255 instead of 16..235/240
};

// Maps frame pixel coordinates to model input coordinates:
// model = frame * scale + offset (crop origin and letterbox padding both
// show up in the offset).
struct FrameTransform {
  double scale_x = 1.0, scale_y = 1.0;
  double offset_x = 0.0, offset_y = 0.0;
};

}  // namespace torchinfer
