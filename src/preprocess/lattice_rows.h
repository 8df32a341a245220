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

// even[i] = sum_k w[k] * rows[k][2 i], odd[i] = sum_k w[k] * rows[k][2 i + 1]
// for i < cells: n mosaic rows summed with their vertical weights, the two
// column sites of a cell stored apart.
void accumulate_cells(const std::uint8_t* const* rows, const float* w, int n, int cells,
                      float* even, float* odd);

// out[x] = sum_k t.weights[x * t.taps + k] * a[t.first[x] + k]; `a` must be
// readable (and finite) t.taps floats past the last first[x].
void resample_row_taps(const float* a, const RowTaps& t, float* out);

// The same through one kernel (tests compare them): false if the CPU lacks
// AVX2/FMA for kAvx2. The two sum in different orders: not the same bits.
enum class LatticeKernel { kScalar, kAvx2 };
bool accumulate_cells_with(LatticeKernel k, const std::uint8_t* const* rows, const float* w, int n,
                           int cells, float* even, float* odd);
bool resample_row_taps_with(LatticeKernel k, const float* a, const RowTaps& t, float* out);

}  // namespace torchinfer
