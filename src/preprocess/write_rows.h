// The last step of preprocessing: three component rows (R, G, B in 0..255
// pixel units, one float per output pixel) scaled, offset and interleaved
// into a row of the float NHWC slot. The scalar per-pixel loop was 11 % of
// a Bayer frame's preprocessing (1920x1200 -> 224); this writes 8 pixels per
// step with AVX2 where the CPU has it.
#pragma once

#include <cstdint>

namespace torchinfer {

// d[3 x + c] = src_c[x] * alpha[c] + beta[c] for c = 0, 1, 2 (the caller
// passes the components in the model's channel order). A multiply and an
// add, each rounded, as the scalar code computes them: every kernel gives
// the same bits.
void write_interleaved(const float* c0, const float* c1, const float* c2, const float alpha[3],
                       const float beta[3], int n, float* d);
// A packed 8-bit RGB (or BGR) row already at the model's size and in its
// channel order: d[i] = src[i] * alpha[i % 3] + beta[i % 3] for i < 3 n, a
// plain conversion (the same bits as reading each sample and writing it
// with write_interleaved).
void convert_packed3(const std::uint8_t* src, const float alpha[3], const float beta[3], int n,
                     float* d);

// The same through one kernel (tests): false if the CPU lacks AVX2.
bool convert_packed3_with(bool avx2, const std::uint8_t* src, const float alpha[3],
                          const float beta[3], int n, float* d);
bool write_interleaved_with(bool avx2, const float* c0, const float* c1, const float* c2,
                            const float alpha[3], const float beta[3], int n, float* d);

}  // namespace torchinfer
