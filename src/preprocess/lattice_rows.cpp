#include "preprocess/lattice_rows.h"

#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <utility>

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

std::vector<std::int16_t> fixed_point_weights(const Taps& t) {
  std::vector<std::int16_t> q(t.weights.size());
  std::vector<std::pair<double, int>> rest;
  for (int i = 0; i < t.size(); ++i) {
    // Largest remainders: the rounded weights keep the float weights' sum
    // (1 for every resampling filter), so a flat image stays exact.
    double sum = 0;
    int total = 0;
    rest.clear();
    for (int k = 0; k < t.count(i); ++k) {
      const double v = static_cast<double>(t.w(i)[k]) * kWeightOne;
      const int down = static_cast<int>(std::floor(v));
      sum += v, total += down;
      q[t.offset[i] + k] = static_cast<std::int16_t>(down);
      rest.emplace_back(v - down, k);
    }
    std::sort(rest.begin(), rest.end(), std::greater<>());
    const int want = static_cast<int>(std::lround(sum));
    for (int r = 0; r < want - total && r < static_cast<int>(rest.size()); ++r)
      ++q[t.offset[i] + rest[r].second];
  }
  return q;
}

namespace {

constexpr float kUnit = 1.f / kWeightOne;

// Exact integer sums, then one conversion: the same bits as the AVX2
// kernel (the sums stay below 2^24, so the conversion is exact too).
void accumulate_cells_scalar(const std::uint8_t* const* rows, const std::int16_t* w, int n,
                             int begin, int cells, float* even, float* odd) {
  for (int i = begin; i < cells; ++i) {
    std::int32_t e = 0, o = 0;
    for (int k = 0; k < n; ++k) e += w[k] * rows[k][2 * i], o += w[k] * rows[k][2 * i + 1];
    even[i] = static_cast<float>(e) * kUnit, odd[i] = static_cast<float>(o) * kUnit;
  }
}

// Rows read at once are many streams for the hardware prefetcher (9 at
// 1920x1200 -> 224); asking for each row's bytes a few steps ahead helps.
constexpr int kAhead = 256;

// Two rows' 32 samples times their weights into s[0..3]: the bytes of the
// two rows interleaved and widened to 16 bits, so one vpmaddwd multiplies
// and adds 8 sample pairs exactly. s[0] holds samples 0-3 and 16-19 (AVX2
// unpacks work per 128-bit lane), s[1] 4-7 and 20-23, s[2] 8-11 and 24-27,
// s[3] 12-15 and 28-31.
__attribute__((target("avx2"))) inline void madd_pair(const std::uint8_t* a, const std::uint8_t* b,
                                                      __m256i w, __m256i* s) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i vb = b ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)) : zero;
  const __m256i lo = _mm256_unpacklo_epi8(va, vb), hi = _mm256_unpackhi_epi8(va, vb);
  s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), w));
  s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), w));
  s[2] = _mm256_add_epi32(s[2], _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), w));
  s[3] = _mm256_add_epi32(s[3], _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), w));
}

// The sums of 32 samples (madd_pair's order) to floats, even and odd
// samples to 16 consecutive floats each.
__attribute__((target("avx2"))) inline void store_split(const __m256i* s, float* even, float* odd) {
  const __m256 unit = _mm256_set1_ps(kUnit);
  __m256 f[4];
  for (int i = 0; i < 4; ++i) f[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(s[i]), unit);
  // [0 2 4 6 | 16 18 20 22] and [8 10 12 14 | 24 26 28 30], then the halves
  // in order; the same for the odd samples.
  const __m256 e01 = _mm256_shuffle_ps(f[0], f[1], _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 e23 = _mm256_shuffle_ps(f[2], f[3], _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 o01 = _mm256_shuffle_ps(f[0], f[1], _MM_SHUFFLE(3, 1, 3, 1));
  const __m256 o23 = _mm256_shuffle_ps(f[2], f[3], _MM_SHUFFLE(3, 1, 3, 1));
  _mm256_storeu_ps(even, _mm256_permute2f128_ps(e01, e23, 0x20));
  _mm256_storeu_ps(even + 8, _mm256_permute2f128_ps(e01, e23, 0x31));
  _mm256_storeu_ps(odd, _mm256_permute2f128_ps(o01, o23, 0x20));
  _mm256_storeu_ps(odd + 8, _mm256_permute2f128_ps(o01, o23, 0x31));
}

// 32 samples per step, their sums in registers across all n rows (two rows
// per multiply-add): each sample is loaded once and no partial sum goes to
// memory. Integer: 7 instructions per row and 32 samples against 12 for
// converting each sample to float and using FMAs.
__attribute__((target("avx2"))) void accumulate_cells_avx2(const std::uint8_t* const* rows,
                                                           const std::int16_t* w, int n, int cells,
                                                           float* even, float* odd) {
  const int len = 2 * cells;
  int j = 0;
  for (; j + 32 <= len; j += 32) {
    __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
    int k = 0;
    for (; k + 1 < n; k += 2) {
      _mm_prefetch(reinterpret_cast<const char*>(rows[k] + j + kAhead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(rows[k + 1] + j + kAhead), _MM_HINT_T0);
      const __m256i wk = _mm256_set1_epi32(static_cast<std::uint16_t>(w[k]) |
                                           static_cast<std::uint32_t>(w[k + 1]) << 16);
      madd_pair(rows[k] + j, rows[k + 1] + j, wk, s);
    }
    if (k < n) {
      _mm_prefetch(reinterpret_cast<const char*>(rows[k] + j + kAhead), _MM_HINT_T0);
      madd_pair(rows[k] + j, nullptr, _mm256_set1_epi32(static_cast<std::uint16_t>(w[k])), s);
    }
    store_split(s, even + j / 2, odd + j / 2);
  }
  accumulate_cells_scalar(rows, w, n, j / 2, cells, even, odd);
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

void accumulate_cells(const std::uint8_t* const* rows, const std::int16_t* w, int n, int cells,
                      float* even, float* odd) {
  if (kHaveAvx2)
    accumulate_cells_avx2(rows, w, n, cells, even, odd);
  else
    accumulate_cells_scalar(rows, w, n, 0, cells, even, odd);
}

void resample_row_taps(const float* a, const RowTaps& t, float* out) {
  if (kHaveAvx2)
    resample_row_taps_avx2(a, t, out);
  else
    resample_row_taps_scalar(a, t, out);
}

bool accumulate_cells_with(LatticeKernel k, const std::uint8_t* const* rows, const std::int16_t* w,
                           int n, int cells, float* even, float* odd) {
  if (k == LatticeKernel::kScalar)
    return accumulate_cells_scalar(rows, w, n, 0, cells, even, odd), true;
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
