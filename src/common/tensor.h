// Framework-neutral view of one output tensor; the memory is owned by the
// BatchOutput it came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer {

enum class DType { kFloat32, kFloat64, kInt32, kInt64, kUInt8, kInt8, kBool };

const char* to_string(DType d);
std::size_t element_size(DType d);

struct TensorView {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> dims;
  const void* data = nullptr;
  std::size_t bytes = 0;

  std::size_t elements() const;
  const float* f32() const {
    return dtype == DType::kFloat32 ? static_cast<const float*>(data) : nullptr;
  }
};

}  // namespace torchinfer
