#include "decode/classification.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "common/error.h"

namespace torchinfer {

namespace {

bool is_integer(DType d) {
  return d == DType::kUInt8 || d == DType::kInt8 || d == DType::kInt32 || d == DType::kInt64;
}

// Integer scores are fixed-point fractions of the dtype's range (a
// quantized model's 0..255 output, say).
double integer_score(const TensorView& t, std::size_t i) {
  switch (t.dtype) {
    case DType::kUInt8:
      return static_cast<const std::uint8_t*>(t.data)[i] / 255.0;
    case DType::kInt8:
      return static_cast<const std::int8_t*>(t.data)[i] / 127.0;
    case DType::kInt32:
      return static_cast<const std::int32_t*>(t.data)[i] /
             static_cast<double>(std::numeric_limits<std::int32_t>::max());
    case DType::kInt64:
      return static_cast<double>(static_cast<const std::int64_t*>(t.data)[i]) /
             static_cast<double>(std::numeric_limits<std::int64_t>::max());
    default:
      return 0;
  }
}

}  // namespace

bool looks_like_class_scores(const TensorView& t) {
  if (t.dims.empty() || !t.data) return false;
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64 && !is_integer(t.dtype))
    return false;
  for (std::size_t i = 0; i + 1 < t.dims.size(); ++i)
    if (t.dims[i] != 1) return false;
  return t.dims.back() >= 1;
}

std::vector<ClassResult> decode_top_k(const TensorView& t, int k, Activation activation,
                                      const std::vector<std::string>& labels) {
  if (!looks_like_class_scores(t))
    throw Error(ErrorKind::kStreamData, "tensor '" + t.name + "' is not a vector of class scores");
  const std::size_t n = static_cast<std::size_t>(t.dims.back());
  std::vector<double> s(n);
  if (is_integer(t.dtype)) {
    for (std::size_t i = 0; i < n; ++i) s[i] = integer_score(t, i);
    activation = Activation::kNone;  // already a confidence
  }
  for (std::size_t i = 0; i < n && !is_integer(t.dtype); ++i) {
    const double v = t.dtype == DType::kFloat32 ? static_cast<const float*>(t.data)[i]
                                                : static_cast<const double*>(t.data)[i];
    s[i] = std::isnan(v) ? -std::numeric_limits<double>::infinity() : v;
  }
  if (activation == Activation::kSoftmax) {
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& v : s) sum += (v = std::isfinite(mx) ? std::exp(v - mx) : (v == mx ? 1.0 : 0.0));
    for (double& v : s) v /= sum;
  } else if (activation == Activation::kSigmoid) {
    for (double& v : s) v = 1.0 / (1.0 + std::exp(-v));
  }
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  const std::size_t kk = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, k)));
  // Stable on ties so equal scores keep the lower id first.
  std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(),
                    [&](int a, int b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  std::vector<ClassResult> out;
  for (std::size_t i = 0; i < kk; ++i) {
    ClassResult r;
    r.label_id = idx[i];
    r.label =
        static_cast<std::size_t>(idx[i]) < labels.size() ? labels[idx[i]] : std::to_string(idx[i]);
    r.confidence = std::isfinite(s[idx[i]]) ? s[idx[i]] : 0.0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace torchinfer
