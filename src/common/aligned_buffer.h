// Float buffer whose start is 64-byte aligned: one cache line, and the widest
// (AVX-512) vector load, so oneDNN reorders and our writers never split lines.
#pragma once

#include <cstddef>
#include <memory>

namespace torchinfer {

constexpr std::size_t kBufferAlignment = 64;

class AlignedBuffer {
 public:
  // kNone leaves the pages untouched so that the thread that first writes
  // them decides their NUMA node (Engine::first_touch does, from the pinned
  // inference threads).
  enum class Init { kZero, kNone };

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n_floats, Init init = Init::kZero);

  float* data() noexcept { return data_.get(); }
  const float* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  struct Free {
    void operator()(float* p) const noexcept;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace torchinfer
