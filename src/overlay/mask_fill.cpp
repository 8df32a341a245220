#include "overlay/mask_fill.h"

#include <algorithm>

#include "overlay/heatmap.h"

namespace torchinfer {
namespace {

struct Area {
  int x0, y0, x1, y1;  // frame pixels covered by both the mask's grid and the frame
};

void fill_rgb(const Mask& m, const std::vector<std::uint8_t>& bits, const Area& a, Rgb c,
              double alpha, OverlayImage& img) {
  const PixelLayout& L = layout_of(img.format);
  const int bpp = L.plane_bpp[0];
  const int r = L.c[0].offset, g = L.c[1].offset, b = L.c[2].offset;
  for (int y = a.y0; y < a.y1; ++y) {
    std::uint8_t* row = img.planes[0] + static_cast<std::size_t>(y) * img.strides[0];
    const std::uint8_t* set = bits.data() + static_cast<std::size_t>(y - m.y) * m.width - m.x;
    for (int x = a.x0; x < a.x1; ++x) {
      if (!set[x]) continue;
      std::uint8_t* p = row + static_cast<std::size_t>(x) * bpp;
      p[r] = blend_sample(p[r], c.r, alpha);
      p[g] = blend_sample(p[g], c.g, alpha);
      p[b] = blend_sample(p[b], c.b, alpha);
    }
  }
}

void fill_yuv(const Mask& m, const std::vector<std::uint8_t>& bits, const Area& a, Rgb c,
              double alpha, OverlayImage& img) {
  const PixelLayout& L = layout_of(img.format);
  std::uint8_t Y = 0, U = 0, V = 0;
  rgb_to_yuv(c, img.matrix, img.full_range, &Y, &U, &V);
  auto at = [&](const Component& k, int x, int y) -> std::uint8_t& {
    return img.planes[k.plane][static_cast<std::size_t>(y) * img.strides[k.plane] +
                               static_cast<std::size_t>(x) * k.step + k.offset];
  };
  auto set = [&](int x, int y) {
    return bits[static_cast<std::size_t>(y - m.y) * m.width + (x - m.x)] != 0;
  };
  for (int y = a.y0; y < a.y1; ++y)
    for (int x = a.x0; x < a.x1; ++x)
      if (set(x, y)) at(L.c[0], x, y) = blend_sample(at(L.c[0], x, y), Y, alpha);
  if (L.kind == PixelLayout::kGray) return;
  const int sub_y = L.plane_half_h[L.c[1].plane] ? 2 : 1;
  for (int cy = (a.y0 + sub_y - 1) / sub_y; cy * sub_y < a.y1; ++cy)
    for (int cx = (a.x0 + 1) / 2; 2 * cx < a.x1; ++cx) {
      if (!set(2 * cx, cy * sub_y)) continue;
      at(L.c[1], cx, cy) = blend_sample(at(L.c[1], cx, cy), U, alpha);
      at(L.c[2], cx, cy) = blend_sample(at(L.c[2], cx, cy), V, alpha);
    }
}

}  // namespace

void fill_mask(const Mask& m, Rgb colour, double alpha, OverlayImage& img) {
  const Area a{std::max(m.x, 0), std::max(m.y, 0), std::min(m.x + m.width, img.width),
               std::min(m.y + m.height, img.height)};
  if (a.x1 <= a.x0 || a.y1 <= a.y0 || m.area == 0) return;
  const std::vector<std::uint8_t> bits = mask_bitmap(m);
  if (bits.empty()) return;
  if (is_yuv_or_gray(img.format))
    fill_yuv(m, bits, a, colour, alpha, img);
  else
    fill_rgb(m, bits, a, colour, alpha, img);
}

}  // namespace torchinfer
