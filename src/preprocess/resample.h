// Separable resampling weights and the row kernel behind the fused
// preprocessor. OpenCV's INTER_AREA takes ~7.5 ms for a 1080p 4:2:2 frame at
// non-integer ratios (one thread); summing the needed source rows with
// vectorised multiply-adds and applying the horizontal weights on the short
// summed row reads the frame once (see tests/bench/preprocess_bench.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace torchinfer {

// For each output index i, source indices first[i] .. first[i]+count(i)-1
// with weights summing to 1.
struct Taps {
  std::vector<int> first;
  std::vector<int> offset;  // size out+1; weights[offset[i] .. offset[i+1])
  std::vector<float> weights;

  int size() const { return static_cast<int>(first.size()); }
  int count(int i) const { return offset[i + 1] - offset[i]; }
  const float* w(int i) const { return weights.data() + offset[i]; }

  // Box filter over [i*s, (i+1)*s), s = src/out: what INTER_AREA computes
  // when shrinking. Only for out <= src.
  static Taps area(int src, int out);
  // OpenCV INTER_LINEAR: pixel centres at +0.5, edges clamped.
  static Taps linear(int src, int out);
  // OpenCV INTER_NEAREST: floor(i * src / out).
  static Taps nearest(int src, int out);

  // The same filter on a plane at half resolution: source index s becomes
  // s / 2 and weights landing on the same sample are added.
  Taps subsampled() const;
  // The same filter applied to one colour of a Bayer mosaic: that colour's
  // `samples` samples sit at source indices 2 j + phase, and each source
  // pixel between them is their linear interpolation (edges replicate the
  // nearest sample) -- bilinear demosaicking of that colour and this filter
  // composed into weights on its samples.
  Taps lattice(int phase, int samples) const;
};

// Taps laid out for vectorising across output columns: every column gets
// `taps` weights (zero-padded), so the inner loop has no per-column length.
// index[x] is first[x] * step, an element offset into the summed row.
struct DenseTaps {
  int taps = 0, n = 0;
  std::vector<int> index;
  std::vector<float> weights;  // [k * n + x]
  DenseTaps() = default;
  DenseTaps(const Taps& t, int step);
};

// out[x] = sum_k weights[k][x] * a[index[x] + k * step]; `a` must be readable
// taps * step elements past the last index.
void resample_row(const float* a, int step, const DenseTaps& t, float* out);
// The same through one kernel (tests: every kernel this CPU runs must give
// the same bits): kScalar, kGather (AVX2 gathers, used on Intel) or kLoads
// (AVX2 with scalar loads, used on AMD); false if the CPU lacks AVX2/FMA.
enum class ResampleKernel { kScalar, kGather, kLoads };
bool resample_row_with(ResampleKernel k, const float* a, int step, const DenseTaps& t, float* out);

// acc[j] = sum_k w[k] * rows[k][j] for j < len (len in samples).
void accumulate_rows(const std::uint8_t* const* rows, const float* w, int n, int len, float* acc);
void accumulate_rows(const std::uint16_t* const* rows, const float* w, int n, int len, float* acc);

}  // namespace torchinfer
