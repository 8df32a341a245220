#include "preprocess/deskew.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "preprocess/row_output.h"

namespace torchinfer {
namespace {

using row_output::RowScale;
using row_output::Writer;

// Where a frame point falls on a component's grid: the four nodes around
// it and the bilinear weights. Components on the same grid (packed RGB's
// three, YUV's two chroma) share one.
struct Tap {
  int i, j, i1, j1;
  float tx, ty;
};

// One component's samples: node (i, j) sits at frame point (x0 + i * dx,
// y0 + j * dy) and is read at base + j * stride + i * step + offset.
struct Grid {
  const std::uint8_t* base = nullptr;
  int stride = 0, step = 1, offset = 0, w = 1, h = 1;
  double x0 = 0.5, y0 = 0.5, dx = 1, dy = 1;
  double inv_dx = 1, inv_dy = 1;  // 1 / dx, 1 / dy: exact, dx and dy are 1 or 2
  bool wide = false;              // 16-bit little-endian samples

  float at(int i, int j) const {
    const std::uint8_t* p =
        base + static_cast<std::size_t>(j) * stride + static_cast<std::size_t>(i) * step + offset;
    return wide ? static_cast<float>(p[0] | (p[1] << 8)) : static_cast<float>(p[0]);
  }
  bool same_nodes(const Grid& o) const {
    return x0 == o.x0 && y0 == o.y0 && dx == o.dx && dy == o.dy && w == o.w && h == o.h;
  }
  // Frame point (x, y) on this grid, the nearest edge node outside.
  Tap locate(double x, double y) const {
    const double fx = std::clamp((x - x0) * inv_dx, 0.0, static_cast<double>(w - 1));
    const double fy = std::clamp((y - y0) * inv_dy, 0.0, static_cast<double>(h - 1));
    const int i = std::min(static_cast<int>(fx), w - 1), j = std::min(static_cast<int>(fy), h - 1);
    return {i,
            j,
            std::min(i + 1, w - 1),
            std::min(j + 1, h - 1),
            static_cast<float>(fx - i),
            static_cast<float>(fy - j)};
  }
  // Bilinear at a located point.
  float sample(const Tap& t) const {
    const float a = at(t.i, t.j), b = at(t.i1, t.j), c = at(t.i, t.j1), d = at(t.i1, t.j1);
    const float top = a + (b - a) * t.tx;
    const float bottom = c + (d - c) * t.tx;
    return top + (bottom - top) * t.ty;
  }
};

// The grid of component c; for Bayer, `second` gives G's other lattice.
Grid grid_of(const PixelLayout& L, const FrameView& f, int c, bool second = false) {
  const Component& k = L.c[c];
  Grid g;
  g.base = f.planes[k.plane];
  g.stride = f.strides[k.plane];
  g.step = k.step * L.sample_bytes;
  g.offset = k.offset;
  g.wide = L.sample_bytes == 2;
  g.w = f.width, g.h = f.height;
  if (L.kind == PixelLayout::kBayer) {
    const int row = second ? 1 - k.row : k.row, col = second ? 1 - k.offset : k.offset;
    g.step = 2, g.offset = col;
    g.base += static_cast<std::size_t>(row) * f.strides[0];
    g.stride = 2 * f.strides[0];
    g.w = (f.width - col + 1) / 2, g.h = (f.height - row + 1) / 2;
    g.x0 = col + 0.5, g.y0 = row + 0.5, g.dx = g.dy = 2;
  } else if (k.chroma) {
    g.w = (f.width + 1) / 2, g.x0 = 1.0, g.dx = 2;
    if (L.plane_half_h[k.plane]) g.h = (f.height + 1) / 2, g.y0 = 1.0, g.dy = 2;
  }
  g.w = std::max(1, g.w), g.h = std::max(1, g.h);
  g.inv_dx = 1 / g.dx, g.inv_dy = 1 / g.dy;
  return g;
}

// Where output pixels sample: the box's frame geometry for the area used.
struct Mapping {
  double cx, cy, cos_a, sin_a;
  double span_w, span_h;  // box extent the area covers, frame pixels
  int new_w, new_h, off_x, off_y, n;
};

Mapping mapping_of(const PreprocessOptions& o, const RotatedBox& b) {
  Mapping m{b.cx, b.cy, 0, 0, b.width, b.height, o.out_width, o.out_height, 0, 0, 1};
  const double quarter = b.angle / 90;
  if (quarter == std::floor(quarter)) {  // exact sines: pixel-exact quarter turns
    const int q = static_cast<int>(std::fmod(std::fmod(quarter, 4.0) + 4.0, 4.0));
    const int cs[4] = {1, 0, -1, 0}, sn[4] = {0, 1, 0, -1};
    m.cos_a = cs[q], m.sin_a = sn[q];
  } else {
    m.cos_a = std::cos(b.angle * RotatedBox::kPi / 180);
    m.sin_a = std::sin(b.angle * RotatedBox::kPi / 180);
  }
  const double sx = o.out_width / b.width, sy = o.out_height / b.height;
  if (o.keep_aspect_ratio) {
    const double s = std::min(sx, sy);
    m.new_w = std::clamp(static_cast<int>(std::lround(b.width * s)), 1, o.out_width);
    m.new_h = std::clamp(static_cast<int>(std::lround(b.height * s)), 1, o.out_height);
    m.off_x = (o.out_width - m.new_w) / 2, m.off_y = (o.out_height - m.new_h) / 2;
  } else if (o.center_crop) {
    const double s = std::max(sx, sy);
    m.span_w = o.out_width / s, m.span_h = o.out_height / s;
  }
  const double shrink = std::max(m.span_w / m.new_w, m.span_h / m.new_h);
  m.n = std::clamp(static_cast<int>(std::ceil(shrink - 1e-9)), 1, 4);
  return m;
}

// Output row v of the area into q (one row per component); bu holds the
// box-axis offset of every sample column (u * n + si), the same for all rows.
void sample_row(const Mapping& m, const Grid* grids, int components, bool bayer, int v,
                const std::vector<double>& bu, std::vector<float>* q) {
  const double inv_n = 1.0 / m.n;
  bool shared[3] = {false, false, false};  // component c on c-1's grid
  for (int c = 1; c < components; ++c) shared[c] = !bayer && grids[c].same_nodes(grids[c - 1]);
  double bv[4];
  for (int sj = 0; sj < m.n; ++sj) bv[sj] = ((v + (sj + 0.5) * inv_n) / m.new_h - 0.5) * m.span_h;
  for (int u = 0; u < m.new_w; ++u) {
    float acc[3] = {0, 0, 0};
    for (int sj = 0; sj < m.n; ++sj)
      for (int si = 0; si < m.n; ++si) {
        const double b_u = bu[static_cast<std::size_t>(u) * m.n + si];
        const double x = m.cx + b_u * m.cos_a - bv[sj] * m.sin_a;
        const double y = m.cy + b_u * m.sin_a + bv[sj] * m.cos_a;
        Tap t{};
        for (int c = 0; c < components; ++c) {
          if (!shared[c]) t = grids[c].locate(x, y);
          float s = grids[c].sample(t);
          if (bayer && c == 1) s = 0.5f * (s + grids[3].sample(grids[3].locate(x, y)));
          acc[c] += s;
        }
      }
    const float k = static_cast<float>(inv_n * inv_n);
    for (int c = 0; c < components; ++c) q[c][u] = acc[c] * k;
  }
}

// Box-axis offsets of the sample columns, u * n + si (see sample_row).
void column_offsets(const Mapping& m, std::vector<double>* bu) {
  const double inv_n = 1.0 / m.n;
  bu->resize(static_cast<std::size_t>(m.new_w) * m.n);
  for (int u = 0; u < m.new_w; ++u)
    for (int si = 0; si < m.n; ++si)
      (*bu)[static_cast<std::size_t>(u) * m.n + si] =
          ((u + (si + 0.5) * inv_n) / m.new_w - 0.5) * m.span_w;
}

}  // namespace

template <typename Out>
FrameTransform deskew_rows(const PreprocessOptions& o, const FrameView& f, const RotatedBox& box,
                           Out* dst, int row_begin, int row_end, Saturation& sat) {
  if (!std::isfinite(box.cx) || !std::isfinite(box.cy) || !std::isfinite(box.angle) ||
      !(box.width > 0) || !(box.height > 0) || !std::isfinite(box.width) ||
      !std::isfinite(box.height))
    throw Error(ErrorKind::kInvalidArgument, "deskewed crop of an empty or non-finite rotated box");
  const PixelLayout& L = layout_of(f.format);
  const Mapping m = mapping_of(o, box);
  const int components = L.kind == PixelLayout::kGray ? 1 : 3;
  const bool bayer = L.kind == PixelLayout::kBayer;
  Grid grids[4];
  for (int c = 0; c < components; ++c) grids[c] = grid_of(L, f, c);
  if (bayer) grids[3] = grid_of(L, f, 1, true);
  const Writer w(o);
  const int C = o.channels();
  if (m.new_w != o.out_width || m.new_h != o.out_height) {
    Out pad[3];
    w.put_gray(static_cast<float>(o.pad_value), pad);
    for (std::size_t i = static_cast<std::size_t>(o.out_width) * row_begin;
         i < static_cast<std::size_t>(o.out_width) * row_end; ++i)
      for (int c = 0; c < C; ++c) dst[i * C + c] = pad[c];
  }
  // Per-thread rows that keep their capacity: no allocation per crop once
  // a thread has cut one as wide.
  thread_local std::vector<float> q[3];
  thread_local std::vector<double> bu;
  for (auto& r : q) r.assign(static_cast<std::size_t>(m.new_w), 0.f);
  const RowScale scale = row_output::row_scale(L, f, o.input_bits);
  column_offsets(m, &bu);
  const int v_end = std::min(m.new_h, row_end - m.off_y);
  for (int v = std::max(0, row_begin - m.off_y); v < v_end; ++v) {
    sample_row(m, grids, components, bayer, v, bu, q);
    Out* d = dst + (static_cast<std::size_t>(v + m.off_y) * o.out_width + m.off_x) * C;
    row_output::write_row(w, L, o.order, scale, q[0].data(), q[1].data(), q[2].data(), m.new_w, C,
                          d, sat);
  }
  FrameTransform t;
  t.scale_x = m.new_w / m.span_w, t.scale_y = m.new_h / m.span_h;
  t.offset_x = m.off_x + m.new_w / 2.0 - box.cx * t.scale_x;
  t.offset_y = m.off_y + m.new_h / 2.0 - box.cy * t.scale_y;
  return t;
}

template FrameTransform deskew_rows(const PreprocessOptions&, const FrameView&, const RotatedBox&,
                                    float*, int, int, Saturation&);
template FrameTransform deskew_rows(const PreprocessOptions&, const FrameView&, const RotatedBox&,
                                    std::uint8_t*, int, int, Saturation&);

}  // namespace torchinfer
