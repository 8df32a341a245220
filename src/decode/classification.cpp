#include "decode/classification.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.h"

namespace torchinfer {

bool looks_like_class_scores(const TensorView& t) {
  if (t.dims.empty() || !t.data) return false;
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64) return false;
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
  for (std::size_t i = 0; i < n; ++i) {
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
