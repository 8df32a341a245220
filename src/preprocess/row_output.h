// The last per-pixel step of preprocessing, shared by every layout's path:
// resampled component rows (0..255 pixel units) written as model channels
// (float or byte, in the model's order, scaled and offset). Only
// preprocess.cpp and deskew.cpp include it: everything here is inline so that the
// per-pixel code compiles into its row loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "preprocess/frame.h"
#include "preprocess/pixel_format.h"
#include "preprocess/preprocess.h"
#include "preprocess/saturation.h"
#include "preprocess/write_rows.h"

namespace torchinfer::row_output {

// Y'CbCr -> R'G'B' in 0..255 pixel units.
struct YuvCoefficients {
  float y_off, k_y, r_v, g_u, g_v, b_u;
};

inline YuvCoefficients yuv_coefficients(YuvMatrix m, bool full_range) {
  double kr = 0.299, kb = 0.114;
  if (m == YuvMatrix::kBT709) kr = 0.2126, kb = 0.0722;
  if (m == YuvMatrix::kBT2020) kr = 0.2627, kb = 0.0593;
  const double kg = 1.0 - kr - kb;
  const double y_scale = full_range ? 1.0 : 255.0 / 219.0;
  const double c_scale = full_range ? 1.0 : 255.0 / 224.0;
  YuvCoefficients c;
  c.y_off = full_range ? 0.f : 16.f;
  c.k_y = static_cast<float>(y_scale);
  c.r_v = static_cast<float>(2.0 * (1.0 - kr) * c_scale);
  c.g_u = static_cast<float>(-2.0 * kb * (1.0 - kb) / kg * c_scale);
  c.g_v = static_cast<float>(-2.0 * kr * (1.0 - kr) / kg * c_scale);
  c.b_u = static_cast<float>(2.0 * (1.0 - kb) * c_scale);
  return c;
}

inline float clamp255(float v) {
  return std::min(255.f, std::max(0.f, v));
}

// Writes one pixel of model channels from rgb (or gray) in 0..255 units.
// It holds copies of the options, not a reference: a store through the
// float output may alias the options' floats, which made the compiler
// reload them and re-dispatch on the channel order for every pixel (11 %
// of a Bayer frame's preprocessing).
struct Writer {
  ChannelOrder order;
  int channels;
  float a0, a1, a2, b0, b1, b2;
  explicit Writer(const PreprocessOptions& o)
      : order(o.order),
        channels(o.channels()),
        a0(o.alpha[0]),
        a1(o.alpha[1]),
        a2(o.alpha[2]),
        b0(o.beta[0]),
        b1(o.beta[1]),
        b2(o.beta[2]) {}
  inline void put(float r, float g, float b, float* d) const {
    switch (order) {
      case ChannelOrder::kRGB:
        d[0] = r * a0 + b0, d[1] = g * a1 + b1, d[2] = b * a2 + b2;
        break;
      case ChannelOrder::kBGR:
        d[0] = b * a0 + b0, d[1] = g * a1 + b1, d[2] = r * a2 + b2;
        break;
      // BT.601 luma weights, as cv::cvtColor(RGB2GRAY) uses.
      case ChannelOrder::kGray:
        d[0] = (0.299f * r + 0.587f * g + 0.114f * b) * a0 + b0;
        break;
    }
  }
  inline void put_gray(float v, float* d) const {
    d[0] = v * a0 + b0;
    if (channels == 3) d[1] = v * a1 + b1, d[2] = v * a2 + b2;
  }
  static inline std::uint8_t byte(float v) { return static_cast<std::uint8_t>(clamp255(v) + 0.5f); }
  inline void put(float r, float g, float b, std::uint8_t* d) const {
    switch (order) {
      case ChannelOrder::kRGB:
        d[0] = byte(r), d[1] = byte(g), d[2] = byte(b);
        break;
      case ChannelOrder::kBGR:
        d[0] = byte(b), d[1] = byte(g), d[2] = byte(r);
        break;
      case ChannelOrder::kGray:
        d[0] = byte(0.299f * r + 0.587f * g + 0.114f * b);
        break;
    }
  }
  inline void put_gray(float v, std::uint8_t* d) const {
    for (int c = 0; c < channels; ++c) d[c] = byte(v);
  }
  // A row of RGB components; float RGB/BGR rows vectorised (write_rows.h).
  template <typename Out>
  void put_row(const float* r, const float* g, const float* b, int n, Out* d) const {
    if constexpr (std::is_same_v<Out, float>) {
      const float alpha[3] = {a0, a1, a2}, beta[3] = {b0, b1, b2};
      if (order == ChannelOrder::kRGB) return write_interleaved(r, g, b, alpha, beta, n, d);
      if (order == ChannelOrder::kBGR) return write_interleaved(b, g, r, alpha, beta, n, d);
    }
    for (int x = 0; x < n; ++x, d += channels) put(r[x], g[x], b[x], d);
  }
};

// What turns a resampled row into pixel units, fixed for the frame.
struct RowScale {
  YuvCoefficients k;
  std::uint32_t full_scale;
  float gray_scale;
  bool may_clamp;
};

inline RowScale row_scale(const PixelLayout& L, const FrameView& f, int input_bits) {
  RowScale m{yuv_coefficients(f.matrix, f.full_range), 0, 1.f, false};
  // 16-bit mono: input_bits full scale -> 255 pixel units.
  m.full_scale = (1u << input_bits) - 1;
  m.gray_scale = L.sample_bytes == 2 ? 255.f / static_cast<float>(m.full_scale) : 1.f;
  // 16 bits cannot exceed their full scale; 8-bit samples are never scaled.
  m.may_clamp = L.sample_bytes == 2 && input_bits < 16;
  return m;
}

// One output row written from the resampled rows q0, q1, q2 (R, G, B; Y,
// U, V; or gray), counting the clamped samples of a 16-bit mono row in sat.
template <typename Out>
inline void write_row(const Writer& w, const PixelLayout& L, ChannelOrder order, const RowScale& m,
                      const float* q0, const float* q1, const float* q2, int new_w, int C, Out* d,
                      Saturation& sat) {
  switch (L.kind) {
    case PixelLayout::kRGB:
    case PixelLayout::kBayer:
      w.put_row(q0, q1, q2, new_w, d);
      break;
    case PixelLayout::kGray:
      if (m.may_clamp) sat.add(clamped_in_row(q0, new_w, m.full_scale));
      for (int x = 0; x < new_w; ++x, d += C) w.put_gray(clamp255(q0[x] * m.gray_scale), d);
      break;
    case PixelLayout::kYUV: {
      const YuvCoefficients& k = m.k;
      for (int x = 0; x < new_w; ++x, d += C) {
        const float luma = k.k_y * (q0[x] - k.y_off);
        if (order == ChannelOrder::kGray) {
          w.put_gray(clamp255(luma), d);
          continue;
        }
        const float u = q1[x] - 128.f, v = q2[x] - 128.f;
        w.put(clamp255(luma + k.r_v * v), clamp255(luma + k.g_u * u + k.g_v * v),
              clamp255(luma + k.b_u * u), d);
      }
      break;
    }
  }
}

}  // namespace torchinfer::row_output
