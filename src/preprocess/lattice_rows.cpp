#include "preprocess/lattice_rows.h"

#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace torchinfer {

RowTaps::RowTaps(const Taps& t) : n(t.size()) {
  int most = 1;
  for (int x = 0; x < n; ++x) most = std::max(most, t.count(x));
  taps = (most + 7) / 8 * 8;
  first = t.first;
  weights.assign(static_cast<std::size_t>(taps) * n, 0.f);
  for (int x = 0; x < n; ++x)
    std::copy(t.w(x), t.w(x) + t.count(x), weights.begin() + static_cast<std::ptrdiff_t>(x) * taps);
}

namespace {

void accumulate_cells_scalar(const std::uint8_t* const* rows, const float* w, int n, int cells,
                             float* even, float* odd) {
  for (int i = 0; i < cells; ++i) {
    float e = 0, o = 0;
    for (int k = 0; k < n; ++k) e += w[k] * rows[k][2 * i], o += w[k] * rows[k][2 * i + 1];
    even[i] = e, odd[i] = o;
  }
}

__attribute__((target("avx2,fma"))) inline __m256 load8(const std::uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// a, b: sums of 16 consecutive samples (8 cells); their even and odd
// samples go to 8 consecutive floats of `even` and `odd`.
__attribute__((target("avx2,fma"))) inline void store_split(__m256 a, __m256 b, float* even,
                                                            float* odd) {
  // shuffle_ps works within 128-bit lanes: [a0 a2 b0 b2 | a4 a6 b4 b6];
  // the 64-bit permute puts the halves in order.
  const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  _mm256_storeu_ps(
      even, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0))));
  _mm256_storeu_ps(
      odd, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0))));
}

// Rows read at once are many streams for the hardware prefetcher (9 at
// 1920x1200 -> 224); asking for each row's bytes a few steps ahead helps.
constexpr int kAhead = 256;

// 32 samples per step, their four sums in registers across all n rows: each
// sample is loaded and converted once, and no partial sum goes to memory.
__attribute__((target("avx2,fma"))) void accumulate_cells_avx2(const std::uint8_t* const* rows,
                                                               const float* w, int n, int cells,
                                                               float* even, float* odd) {
  const int len = 2 * cells;
  int j = 0;
  for (; j + 32 <= len; j += 32) {
    const std::uint8_t* p = rows[0] + j;
    __m256 wk = _mm256_set1_ps(w[0]);
    __m256 s0 = _mm256_mul_ps(wk, load8(p)), s1 = _mm256_mul_ps(wk, load8(p + 8)),
           s2 = _mm256_mul_ps(wk, load8(p + 16)), s3 = _mm256_mul_ps(wk, load8(p + 24));
    _mm_prefetch(reinterpret_cast<const char*>(p + kAhead), _MM_HINT_T0);
    for (int k = 1; k < n; ++k) {
      p = rows[k] + j;
      _mm_prefetch(reinterpret_cast<const char*>(p + kAhead), _MM_HINT_T0);
      wk = _mm256_set1_ps(w[k]);
      s0 = _mm256_fmadd_ps(wk, load8(p), s0), s1 = _mm256_fmadd_ps(wk, load8(p + 8), s1);
      s2 = _mm256_fmadd_ps(wk, load8(p + 16), s2), s3 = _mm256_fmadd_ps(wk, load8(p + 24), s3);
    }
    store_split(s0, s1, even + j / 2, odd + j / 2);
    store_split(s2, s3, even + j / 2 + 8, odd + j / 2 + 8);
  }
  for (int i = j / 2; i < cells; ++i) {
    float e = 0, o = 0;
    for (int k = 0; k < n; ++k)
      e = std::fma(w[k], static_cast<float>(rows[k][2 * i]), e),
      o = std::fma(w[k], static_cast<float>(rows[k][2 * i + 1]), o);
    even[i] = e, odd[i] = o;
  }
}

void resample_row_taps_scalar(const float* a, const RowTaps& t, float* out) {
  for (int x = 0; x < t.n; ++x) {
    const float* p = a + t.first[x];
    const float* w = t.weights.data() + static_cast<std::size_t>(x) * t.taps;
    float s = 0;
    for (int k = 0; k < t.taps; ++k) s += w[k] * p[k];
    out[x] = s;
  }
}

// One output's products, 8 lanes wide (lane k: taps k, k + 8, ...); Chunks:
// taps / 8, fixed for the common 8 and 16 so the loop unrolls.
template <int Chunks>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 products(const float* p,
                                                                          const float* w,
                                                                          int chunks) {
  const int c = Chunks > 0 ? Chunks : chunks;
  __m256 s = _mm256_mul_ps(_mm256_loadu_ps(w), _mm256_loadu_ps(p));
  for (int k = 1; k < c; ++k)
    s = _mm256_fmadd_ps(_mm256_loadu_ps(w + 8 * k), _mm256_loadu_ps(p + 8 * k), s);
  return s;
}

// Eight outputs' products summed across lanes at once: three rounds of
// horizontal adds and one cross-lane add leave output i in lane i.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 lane_sums(__m256 v0, __m256 v1,
                                                                           __m256 v2, __m256 v3,
                                                                           __m256 v4, __m256 v5,
                                                                           __m256 v6, __m256 v7) {
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(v4, v5), _mm256_hadd_ps(v6, v7));
  return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

template <int Chunks>
__attribute__((target("avx2,fma"))) void taps_avx2(const float* a, const RowTaps& t, float* out) {
  const int n = t.n, taps = t.taps, chunks = taps / 8;
  const int* first = t.first.data();
  const float* w = t.weights.data();
#define TORCHINFER_AT(x) \
  products<Chunks>(a + first[x], w + static_cast<std::size_t>(x) * taps, chunks)
  int x = 0;
  for (; x + 8 <= n; x += 8)
    _mm256_storeu_ps(out + x,
                     lane_sums(TORCHINFER_AT(x), TORCHINFER_AT(x + 1), TORCHINFER_AT(x + 2),
                               TORCHINFER_AT(x + 3), TORCHINFER_AT(x + 4), TORCHINFER_AT(x + 5),
                               TORCHINFER_AT(x + 6), TORCHINFER_AT(x + 7)));
  if (x == n) return;
  // The last < 8 outputs the same way, so every output is summed alike.
  __m256 v[8];
  for (int i = 0; i < 8; ++i) v[i] = x + i < n ? TORCHINFER_AT(x + i) : _mm256_setzero_ps();
#undef TORCHINFER_AT
  alignas(32) float last[8];
  _mm256_store_ps(last, lane_sums(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]));
  std::copy(last, last + (n - x), out + x);
}

void resample_row_taps_avx2(const float* a, const RowTaps& t, float* out) {
  if (t.taps == 8)
    taps_avx2<1>(a, t, out);
  else if (t.taps == 16)
    taps_avx2<2>(a, t, out);
  else
    taps_avx2<0>(a, t, out);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

}  // namespace

void accumulate_cells(const std::uint8_t* const* rows, const float* w, int n, int cells,
                      float* even, float* odd) {
  if (kHaveAvx2)
    accumulate_cells_avx2(rows, w, n, cells, even, odd);
  else
    accumulate_cells_scalar(rows, w, n, cells, even, odd);
}

void resample_row_taps(const float* a, const RowTaps& t, float* out) {
  if (kHaveAvx2)
    resample_row_taps_avx2(a, t, out);
  else
    resample_row_taps_scalar(a, t, out);
}

bool accumulate_cells_with(LatticeKernel k, const std::uint8_t* const* rows, const float* w, int n,
                           int cells, float* even, float* odd) {
  if (k == LatticeKernel::kScalar)
    return accumulate_cells_scalar(rows, w, n, cells, even, odd), true;
  if (!kHaveAvx2) return false;
  accumulate_cells_avx2(rows, w, n, cells, even, odd);
  return true;
}

bool resample_row_taps_with(LatticeKernel k, const float* a, const RowTaps& t, float* out) {
  if (k == LatticeKernel::kScalar) return resample_row_taps_scalar(a, t, out), true;
  if (!kHaveAvx2) return false;
  resample_row_taps_avx2(a, t, out);
  return true;
}

}  // namespace torchinfer
