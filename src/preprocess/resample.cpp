#include "preprocess/resample.h"

#include <algorithm>
#include <cmath>

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

DenseTaps::DenseTaps(const Taps& t, int step) : n(t.size()) {
  for (int x = 0; x < n; ++x) taps = std::max(taps, t.count(x));
  index.resize(n);
  weights.assign(static_cast<std::size_t>(taps) * n, 0.f);
  for (int x = 0; x < n; ++x) {
    index[x] = t.first[x] * step;
    for (int k = 0; k < t.count(x); ++k) weights[static_cast<std::size_t>(k) * n + x] = t.w(x)[k];
  }
}

// Gathers across output columns: with AVX2/AVX-512 each tap is one gather
// and one FMA for 8/16 columns, instead of a dependent chain per column.
__attribute__((target_clones("avx512f", "avx2", "default"))) void resample_row(const float* a,
                                                                               int step,
                                                                               const DenseTaps& t,
                                                                               float* out) {
  const int n = t.n;
  const int* __restrict idx = t.index.data();
  float* __restrict o = out;
  const float* __restrict w0 = t.weights.data();
  for (int x = 0; x < n; ++x) o[x] = w0[x] * a[idx[x]];
  for (int k = 1; k < t.taps; ++k) {
    const float* __restrict wk = t.weights.data() + static_cast<std::size_t>(k) * n;
    const float* __restrict ak = a + static_cast<std::size_t>(k) * step;
    for (int x = 0; x < n; ++x) o[x] += wk[x] * ak[idx[x]];
  }
}

// The hot loop: widened to AVX2/AVX-512 at run time where the CPU has them
// (Debian builds for baseline x86-64, i.e. SSE2 only).
__attribute__((target_clones("avx512f", "avx2", "default"))) void accumulate_rows(
    const std::uint8_t* const* rows, const float* w, int n, int len, float* acc) {
  // uint8_t may alias anything: without __restrict the compiler must assume
  // each store to acc can change the source rows and will not vectorise.
  float* __restrict a = acc;
  int k = 0;
  if (n >= 2) {
    const std::uint8_t* __restrict r0 = rows[0], * __restrict r1 = rows[1];
    const float w0 = w[0], w1 = w[1];
    for (int j = 0; j < len; ++j) a[j] = w0 * r0[j] + w1 * r1[j];
    k = 2;
  } else {
    const std::uint8_t* __restrict r0 = rows[0];
    const float w0 = w[0];
    for (int j = 0; j < len; ++j) a[j] = w0 * r0[j];
    k = 1;
  }
  // Two rows per pass halves the accumulator traffic.
  for (; k + 1 < n; k += 2) {
    const std::uint8_t* __restrict r0 = rows[k], * __restrict r1 = rows[k + 1];
    const float w0 = w[k], w1 = w[k + 1];
    for (int j = 0; j < len; ++j) a[j] += w0 * r0[j] + w1 * r1[j];
  }
  if (k < n) {
    const std::uint8_t* __restrict r0 = rows[k];
    const float w0 = w[k];
    for (int j = 0; j < len; ++j) a[j] += w0 * r0[j];
  }
}

}  // namespace torchinfer
