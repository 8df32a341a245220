// A constructed GRAY8 frame for the motion gates' tests (motion_gate.h,
// tile_gate.h): one value everywhere, then rectangles changed by a step.
#pragma once

#include <cstdint>
#include <vector>

#include "preprocess/frame.h"

namespace torchinfer::test {

// A GRAY8 frame of one value (128x64 pixels = 16x8 samples = 2x1 cells).
struct Gray {
  int width, height;
  std::vector<std::uint8_t> px;
  Gray(int w, int h, int v) : width(w), height(h), px(std::size_t(w) * h, std::uint8_t(v)) {}
  // Adds `d` to the pixels of [x0, x1) x [y0, y1).
  Gray& add(int x0, int y0, int x1, int y1, int d) {
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) px[std::size_t(y) * width + x] += d;
    return *this;
  }
  FrameView view() const {
    FrameView v;
    v.format = PixelFormat::kGRAY8;
    v.width = width;
    v.height = height;
    v.planes[0] = px.data();
    v.strides[0] = width;
    return v;
  }
};

}  // namespace torchinfer::test
