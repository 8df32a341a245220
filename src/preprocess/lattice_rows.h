// Row kernels of the Bayer lattice path (preprocess.cpp, resample_lattice).
// The generic kernels (resample.h) sum mosaic rows into one interleaved
// float row and then read each colour site every 2nd float with scalar
// loads: at 1920x1200 -> 224 that was 1.26 ms a frame, 84 % of it in those
// two loops. Here the vertical sum keeps its accumulators in registers across
// the rows and splits the two column sites as it stores, so each site is a
// contiguous row; the horizontal pass then reads each output's taps with
// one or two contiguous vector loads instead of one scalar load per tap.
#pragma once

#include <cstdint>
#include <vector>

#include "preprocess/resample.h"

namespace torchinfer {

// Horizontal taps laid out per output: output x reads first[x] ..
// first[x] + taps - 1, weights[x * taps + k] (zero past its own count);
// taps is a multiple of 8 so each output is whole vector loads.
struct RowTaps {
  int taps = 0, n = 0;
  std::vector<int> first;
  std::vector<float> weights;
  RowTaps() = default;
  explicit RowTaps(const Taps& t);
};

// Vertical weights in fixed point: kWeightOne is 1. Per output, the rounded
// weights sum to the float weights' sum rounded (largest remainders), so
// weights summing to 1 leave a flat image exact. Each weight is off by less
// than 1/16384 and the errors cancel in the sum: a sum of n rows is off by
// less than n/128 of a pixel value (0.008 per row before normalising), on
// hard edges only (bayer-numerics has the effect: docs/performance.md).
constexpr int kWeightOne = 1 << 14;
std::vector<std::int16_t> fixed_point_weights(const Taps& t);  // Taps' layout (offset)

// even[i] = sum_k w[k] * rows[k][2 i] / kWeightOne, odd[i] the same for
// rows[k][2 i + 1], for i < cells: n mosaic rows summed with their
// vertical weights, exactly (integers), the two column sites of a cell
// stored apart. Every kernel gives the same bits.
void accumulate_cells(const std::uint8_t* const* rows, const std::int16_t* w, int n, int cells,
                      float* even, float* odd);

// out[x] = sum_k t.weights[x * t.taps + k] * a[t.first[x] + k]; `a` must be
// readable (and finite) t.taps floats past the last first[x].
void resample_row_taps(const float* a, const RowTaps& t, float* out);

// The same through one kernel (tests compare them): false if the CPU lacks
// AVX2/FMA for kAvx2. accumulate_cells: the same bits; resample_row_taps
// sums in a different order.
enum class LatticeKernel { kScalar, kAvx2 };
bool accumulate_cells_with(LatticeKernel k, const std::uint8_t* const* rows, const std::int16_t* w,
                           int n, int cells, float* even, float* odd);
bool resample_row_taps_with(LatticeKernel k, const float* a, const RowTaps& t, float* out);

}  // namespace torchinfer
