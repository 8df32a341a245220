// Byte buffer whose start is 64-byte aligned: one cache line, and the widest
// (AVX-512) vector load, so oneDNN reorders and our writers never split lines.
// Holds whatever the model takes (float or uint8 batches): sized in bytes,
// read through data<T>().
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
  explicit AlignedBuffer(std::size_t bytes, Init init = Init::kZero);

  void* data() noexcept { return data_.get(); }
  const void* data() const noexcept { return data_.get(); }
  template <typename T>
  T* data() noexcept {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* data() const noexcept {
    return static_cast<const T*>(data());
  }
  std::size_t bytes() const noexcept { return bytes_; }
  bool empty() const noexcept { return bytes_ == 0; }

 private:
  struct Free {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, Free> data_;
  std::size_t bytes_ = 0;
};

}  // namespace torchinfer
