#include "common/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace torchinfer {

AlignedBuffer::AlignedBuffer(std::size_t bytes, Init init) : bytes_(bytes) {
  if (bytes == 0) return;
  // aligned_alloc needs a size that is a multiple of the alignment.
  const std::size_t padded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* p = std::aligned_alloc(kBufferAlignment, padded);
  if (!p) throw std::bad_alloc();
  // Zeroing also commits the pages here, not on the first frame.
  if (init == Init::kZero) std::memset(p, 0, padded);
  data_.reset(p);
}

void AlignedBuffer::Free::operator()(void* p) const noexcept {
  std::free(p);
}

}  // namespace torchinfer
