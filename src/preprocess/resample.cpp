#include "preprocess/resample.h"

#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstddef>

namespace torchinfer {
namespace {

void push(Taps& t, int first, const std::vector<float>& w) {
  t.first.push_back(first);
  t.weights.insert(t.weights.end(), w.begin(), w.end());
  t.offset.push_back(static_cast<int>(t.weights.size()));
}

}  // namespace

Taps Taps::area(int src, int out) {
  Taps t;
  t.offset.push_back(0);
  const double scale = static_cast<double>(src) / out;
  for (int i = 0; i < out; ++i) {
    const double f0 = i * scale, f1 = std::min<double>(src, f0 + scale);
    const int s0 = static_cast<int>(std::floor(f0));
    const int s1 = std::min(src, static_cast<int>(std::ceil(f1)));
    std::vector<float> w;
    double sum = 0;
    int first = -1;
    for (int s = s0; s < s1; ++s) {
      const double cover = std::min<double>(s + 1, f1) - std::max<double>(s, f0);
      if (cover <= 1e-9) continue;
      if (first < 0) first = s;
      // A skipped zero-cover tap can only be at the start, so indices stay contiguous.
      w.push_back(static_cast<float>(cover));
      sum += cover;
    }
    for (float& v : w) v = static_cast<float>(v / sum);
    push(t, first, w);
  }
  return t;
}

Taps Taps::linear(int src, int out) {
  Taps t;
  t.offset.push_back(0);
  const double scale = static_cast<double>(src) / out;
  for (int i = 0; i < out; ++i) {
    double fx = (i + 0.5) * scale - 0.5;
    int x0 = static_cast<int>(std::floor(fx));
    double a = fx - x0;
    if (x0 < 0) x0 = 0, a = 0;
    if (x0 >= src - 1) x0 = src - 1, a = 0;
    if (a > 0)
      push(t, x0, {static_cast<float>(1 - a), static_cast<float>(a)});
    else
      push(t, x0, {1.f});
  }
  return t;
}

Taps Taps::nearest(int src, int out) {
  Taps t;
  t.offset.push_back(0);
  const double scale = static_cast<double>(src) / out;
  for (int i = 0; i < out; ++i)
    push(t, std::min(src - 1, static_cast<int>(std::floor(i * scale))), {1.f});
  return t;
}

Taps Taps::subsampled() const {
  Taps t;
  t.offset.push_back(0);
  for (int i = 0; i < size(); ++i) {
    std::vector<float> w;
    const int first = this->first[i] / 2;
    for (int k = 0; k < count(i); ++k) {
      const std::size_t j = static_cast<std::size_t>((this->first[i] + k) / 2 - first);
      if (w.size() <= j) w.resize(j + 1, 0.f);
      w[j] += this->w(i)[k];
    }
    push(t, first, w);
  }
  return t;
}

Taps Taps::lattice(int phase, int samples) const {
  Taps t;
  t.offset.push_back(0);
  std::vector<float> w;
  for (int i = 0; i < size(); ++i) {
    // Source s lies at lattice position (s - phase) / 2: on sample j, or
    // halfway between j and j + 1.
    auto split = [&](int s, int* j0, int* j1) {
      const int num = s - phase;
      *j0 = num >= 0 ? num / 2 : -((1 - num) / 2);
      *j1 = num % 2 == 0 ? *j0 : *j0 + 1;
      *j0 = std::clamp(*j0, 0, samples - 1), *j1 = std::clamp(*j1, 0, samples - 1);
    };
    int lo = samples, hi = -1, j0, j1;
    for (int k = 0; k < count(i); ++k) {
      split(first[i] + k, &j0, &j1);
      lo = std::min(lo, j0), hi = std::max(hi, j1);
    }
    w.assign(hi - lo + 1, 0.f);
    for (int k = 0; k < count(i); ++k) {
      split(first[i] + k, &j0, &j1);
      w[j0 - lo] += 0.5f * this->w(i)[k];
      w[j1 - lo] += 0.5f * this->w(i)[k];
    }
    push(t, lo, w);
  }
  return t;
}

DenseTaps::DenseTaps(const Taps& t, int step) : n(t.size()) {
  for (int x = 0; x < n; ++x) taps = std::max(taps, t.count(x));
  index.resize(n);
  weights.assign(static_cast<std::size_t>(taps) * n, 0.f);
  for (int x = 0; x < n; ++x) {
    index[x] = t.first[x] * step;
    for (int k = 0; k < t.count(x); ++k) weights[static_cast<std::size_t>(k) * n + x] = t.w(x)[k];
  }
}

namespace {

// Portable path: one output column at a time, its taps summed in registers.
void resample_row_scalar(const float* a, int step, const DenseTaps& t, float* out) {
  const int n = t.n, taps = t.taps;
  for (int x = 0; x < n; ++x) {
    const float* p = a + t.index[x];
    float s0 = 0, s1 = 0;
    int k = 0;
    for (; k + 1 < taps; k += 2)
      s0 += t.weights[static_cast<std::size_t>(k) * n + x] * p[k * step],
          s1 += t.weights[static_cast<std::size_t>(k + 1) * n + x] * p[(k + 1) * step];
    if (k < taps) s0 += t.weights[static_cast<std::size_t>(k) * n + x] * p[k * step];
    out[x] = s0 + s1;
  }
}

// Eight output columns per step: one gather and one FMA per tap (Intel,
// where vgatherdps is cheap). GCC does not emit gathers for the plain loop
// under generic tuning, hence intrinsics.
__attribute__((target("avx2,fma"))) void resample_row_gather(const float* a, int step,
                                                             const DenseTaps& t, float* out) {
  const int n = t.n, taps = t.taps;
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.index.data() + x));
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int k = 0;
    for (; k + 1 < taps; k += 2) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k) * n + x),
                           _mm256_i32gather_ps(a + static_cast<std::ptrdiff_t>(k) * step, idx, 4),
                           s0);
      s1 = _mm256_fmadd_ps(
          _mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k + 1) * n + x),
          _mm256_i32gather_ps(a + static_cast<std::ptrdiff_t>(k + 1) * step, idx, 4), s1);
    }
    if (k < taps)
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k) * n + x),
                           _mm256_i32gather_ps(a + static_cast<std::ptrdiff_t>(k) * step, idx, 4),
                           s0);
    _mm256_storeu_ps(out + x, _mm256_add_ps(s0, s1));
  }
  for (; x < n; ++x) {
    float s = 0;
    for (int k = 0; k < taps; ++k)
      s += t.weights[static_cast<std::size_t>(k) * n + x] * a[t.index[x] + k * step];
    out[x] = s;
  }
}

// The same with the eight inputs of a tap read by scalar loads: on AMD
// (Zen 3 measured) vgatherdps was the costliest instruction of
// preprocessing, a quarter of a 1080p frame's time, and this is 16-19 %
// faster per frame (preprocess-bench, 1080p YUY2/NV12 and 720p RGB to 224).
// Same products in the same order: the same bits.
__attribute__((target("avx2,fma"))) void resample_row_loads(const float* a, int step,
                                                            const DenseTaps& t, float* out) {
  const int n = t.n, taps = t.taps;
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    const int* ix = t.index.data() + x;
    const float *p0 = a + ix[0], *p1 = a + ix[1], *p2 = a + ix[2], *p3 = a + ix[3], *p4 = a + ix[4],
                *p5 = a + ix[5], *p6 = a + ix[6], *p7 = a + ix[7];
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int k = 0;
#define TORCHINFER_COLUMN(kk)                                                               \
  _mm256_setr_ps(p0[(kk)*step], p1[(kk)*step], p2[(kk)*step], p3[(kk)*step], p4[(kk)*step], \
                 p5[(kk)*step], p6[(kk)*step], p7[(kk)*step])
    for (; k + 1 < taps; k += 2) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k) * n + x),
                           TORCHINFER_COLUMN(k), s0);
      s1 = _mm256_fmadd_ps(
          _mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k + 1) * n + x),
          TORCHINFER_COLUMN(k + 1), s1);
    }
    if (k < taps)
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(t.weights.data() + static_cast<std::size_t>(k) * n + x),
                           TORCHINFER_COLUMN(k), s0);
    _mm256_storeu_ps(out + x, _mm256_add_ps(s0, s1));
#undef TORCHINFER_COLUMN
  }
  for (; x < n; ++x) {
    float s = 0;
    for (int k = 0; k < taps; ++k)
      s += t.weights[static_cast<std::size_t>(k) * n + x] * a[t.index[x] + k * step];
    out[x] = s;
  }
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
const bool kSlowGather = __builtin_cpu_is("amd");

}  // namespace

void resample_row(const float* a, int step, const DenseTaps& t, float* out) {
  if (kHaveAvx2 && kSlowGather)
    resample_row_loads(a, step, t, out);
  else if (kHaveAvx2)
    resample_row_gather(a, step, t, out);
  else
    resample_row_scalar(a, step, t, out);
}

bool resample_row_with(ResampleKernel k, const float* a, int step, const DenseTaps& t, float* out) {
  if (k != ResampleKernel::kScalar && !kHaveAvx2) return false;
  if (k == ResampleKernel::kScalar) resample_row_scalar(a, step, t, out);
  if (k == ResampleKernel::kGather) resample_row_gather(a, step, t, out);
  if (k == ResampleKernel::kLoads) resample_row_loads(a, step, t, out);
  return true;
}

namespace {

// The hot loop, compiled three times below: Debian builds for baseline
// x86-64 (SSE2 only), and GCC keeps to 256-bit vectors unless told otherwise.
// T: 8-bit samples, or 16-bit ones (GRAY16_LE).
template <typename T>
__attribute__((always_inline)) inline void accumulate_body(const T* const* rows, const float* w,
                                                           int n, int len, float* acc) {
  // uint8_t may alias anything: without __restrict the compiler must assume
  // each store to acc can change the source rows and will not vectorise.
  float* __restrict a = acc;
  int k = 0;
  if (n >= 2) {
    const T* __restrict r0 = rows[0], * __restrict r1 = rows[1];
    const float w0 = w[0], w1 = w[1];
    for (int j = 0; j < len; ++j) a[j] = w0 * r0[j] + w1 * r1[j];
    k = 2;
  } else {
    const T* __restrict r0 = rows[0];
    const float w0 = w[0];
    for (int j = 0; j < len; ++j) a[j] = w0 * r0[j];
    k = 1;
  }
  // Two rows per pass halves the accumulator traffic.
  for (; k + 1 < n; k += 2) {
    const T* __restrict r0 = rows[k], * __restrict r1 = rows[k + 1];
    const float w0 = w[k], w1 = w[k + 1];
    for (int j = 0; j < len; ++j) a[j] += w0 * r0[j] + w1 * r1[j];
  }
  if (k < n) {
    const T* __restrict r0 = rows[k];
    const float w0 = w[k];
    for (int j = 0; j < len; ++j) a[j] += w0 * r0[j];
  }
}

template <typename T>
__attribute__((target("avx512f,avx512bw,prefer-vector-width=512"))) void accumulate_avx512(
    const T* const* rows, const float* w, int n, int len, float* acc) {
  accumulate_body(rows, w, n, len, acc);
}

template <typename T>
__attribute__((target("avx2,fma"))) void accumulate_avx2(const T* const* rows, const float* w,
                                                         int n, int len, float* acc) {
  accumulate_body(rows, w, n, len, acc);
}

const bool kHaveAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");

template <typename T>
void accumulate(const T* const* rows, const float* w, int n, int len, float* acc) {
  if (kHaveAvx512)
    accumulate_avx512(rows, w, n, len, acc);
  else if (kHaveAvx2)
    accumulate_avx2(rows, w, n, len, acc);
  else
    accumulate_body(rows, w, n, len, acc);
}

}  // namespace

void accumulate_rows(const std::uint8_t* const* rows, const float* w, int n, int len, float* acc) {
  accumulate(rows, w, n, len, acc);
}

void accumulate_rows(const std::uint16_t* const* rows, const float* w, int n, int len, float* acc) {
  accumulate(rows, w, n, len, acc);
}

}  // namespace torchinfer
