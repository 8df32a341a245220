#include "common/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace torchinfer {

AlignedBuffer::AlignedBuffer(std::size_t n_floats, Init init) : size_(n_floats) {
  if (n_floats == 0) return;
  // aligned_alloc needs a size that is a multiple of the alignment.
  std::size_t bytes = n_floats * sizeof(float);
  bytes = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* p = std::aligned_alloc(kBufferAlignment, bytes);
  if (!p) throw std::bad_alloc();
  // Zeroing also commits the pages here, not on the first frame.
  if (init == Init::kZero) std::memset(p, 0, bytes);
  data_.reset(static_cast<float*>(p));
}

void AlignedBuffer::Free::operator()(float* p) const noexcept {
  std::free(p);
}

}  // namespace torchinfer
