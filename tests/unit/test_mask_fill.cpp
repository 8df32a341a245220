// torchoverlay's mask fill (src/overlay/mask_fill.h): exact blended values
// on the pixels the runs set, nothing elsewhere, in RGB and I420.
#include <gtest/gtest.h>

#include "overlay/heatmap.h"
#include "overlay/mask_fill.h"

using namespace torchinfer;

namespace {

Mask mask(int x, int y, int w, int h, std::vector<std::uint32_t> runs) {
  Mask m;
  m.x = x, m.y = y, m.width = w, m.height = h;
  m.runs = std::move(runs);
  for (std::size_t i = 1; i < m.runs.size(); i += 2) m.area += m.runs[i];
  return m;
}

OverlayImage rgb(std::vector<std::uint8_t>& px, int w, int h) {
  px.assign(static_cast<std::size_t>(w) * h * 3, 100);
  OverlayImage img;
  img.format = PixelFormat::kRGB;
  img.width = w, img.height = h;
  img.planes[0] = px.data();
  img.strides[0] = w * 3;
  return img;
}

}  // namespace

TEST(MaskFill, BlendsTheSetPixelsOnly) {
  std::vector<std::uint8_t> px;
  OverlayImage img = rgb(px, 6, 2);
  // Grid x 1..3, y 0..1: row 0 unset, set, set; row 1 unset, unset, set.
  fill_mask(mask(1, 0, 3, 2, {1, 2, 2, 1}), Rgb{200, 0, 50}, 0.5, img);
  auto at = [&](int x, int y, int c) { return px[static_cast<std::size_t>(y * 6 + x) * 3 + c]; };
  for (auto [x, y] : {std::pair{2, 0}, {3, 0}, {3, 1}}) {
    EXPECT_EQ(at(x, y, 0), 150) << x << "," << y;
    EXPECT_EQ(at(x, y, 1), 50);
    EXPECT_EQ(at(x, y, 2), 75);
  }
  int untouched = 0;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 6; ++x) untouched += at(x, y, 0) == 100 && at(x, y, 1) == 100;
  EXPECT_EQ(untouched, 12 - 3);
}

TEST(MaskFill, GridPastTheFrameEdgeIsClipped) {
  std::vector<std::uint8_t> px;
  OverlayImage img = rgb(px, 6, 2);
  fill_mask(mask(5, 1, 3, 2, {0, 6}), Rgb{0, 0, 0}, 1.0, img);
  EXPECT_EQ(px[(1 * 6 + 5) * 3], 0);
  EXPECT_EQ(px[(1 * 6 + 4) * 3], 100);
  // Runs that do not cover the grid draw nothing.
  fill_mask(mask(0, 0, 2, 2, {0, 3}), Rgb{0, 0, 0}, 1.0, img);
  EXPECT_EQ(px[0], 100);
}

TEST(MaskFill, I420ChromaFollowsTheFirstPixelOfEachSample) {
  std::vector<std::uint8_t> y(16, 100), u(4, 128), v(4, 128);
  OverlayImage img;
  img.format = PixelFormat::kI420;
  img.width = img.height = 4;
  img.planes[0] = y.data(), img.planes[1] = u.data(), img.planes[2] = v.data();
  img.strides[0] = 4, img.strides[1] = img.strides[2] = 2;
  img.full_range = true;
  std::uint8_t Y = 0, U = 0, V = 0;
  rgb_to_yuv(Rgb{255, 0, 0}, img.matrix, true, &Y, &U, &V);
  // Pixels (0, 0) and (3, 3): sample (0, 0) takes the colour, sample (1, 1)
  // does not (its first pixel (2, 2) is unset).
  fill_mask(mask(0, 0, 4, 4, {0, 1, 14, 1}), Rgb{255, 0, 0}, 0.5, img);
  EXPECT_EQ(y[0], blend_sample(100, Y, 0.5));
  EXPECT_EQ(y[15], blend_sample(100, Y, 0.5));
  EXPECT_EQ(y[5], 100);
  EXPECT_EQ(u[0], blend_sample(128, U, 0.5));
  EXPECT_EQ(v[0], blend_sample(128, V, 0.5));
  EXPECT_EQ(u[3], 128);
  EXPECT_EQ(v[3], 128);
}

TEST(MaskFill, SceneFillsMasksUnderTheBoxes) {
  std::vector<std::uint8_t> px;
  OverlayImage img = rgb(px, 6, 2);
  OverlayScene scene;
  scene.masks.push_back({mask(0, 0, 6, 2, {0, 12}), 3});
  scene.mask_alpha = 1.0;
  Overlay().draw(scene, img);
  const Rgb c = class_colour(3);
  EXPECT_EQ(px[0], c.r);
  EXPECT_EQ(px[1], c.g);
  EXPECT_EQ(px[2], c.b);
}
