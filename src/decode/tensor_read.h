// Reading the decoders' output tensors (detection, yolov8-obb): one place
// for what each decoder would otherwise restate.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor.h"

namespace torchinfer::tensor_read {

// Element i of a float32/float64 tensor, as double.
inline double value(const TensorView& t, std::size_t i) {
  return t.dtype == DType::kFloat32 ? static_cast<const float*>(t.data)[i]
                                    : static_cast<const double*>(t.data)[i];
}

// The dims without a leading batch dimension of 1.
inline std::vector<std::int64_t> frame_dims(const TensorView& t) {
  std::vector<std::int64_t> d = t.dims;
  if (d.size() == 3 && d[0] == 1) d.erase(d.begin());
  return d;
}

// Float, and its memory covers its dims.
inline bool is_float(const TensorView& t) {
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64) return false;
  const std::size_t n = t.elements();
  return n == 0 || (t.data != nullptr && t.bytes >= n * element_size(t.dtype));
}

}  // namespace torchinfer::tensor_read
