// One reference to something the owner of a stream holds (a GStreamer buffer
// or event, to the element), released by the owner's function when dropped:
// on flush and stop the core disposes of queued items without knowing what
// they are.
#pragma once

#include <utility>

namespace torchinfer {

class OwnedRef {
 public:
  using Release = void (*)(void*);

  OwnedRef() = default;
  OwnedRef(void* p, Release release) : p_(p), release_(release) {}
  OwnedRef(OwnedRef&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), release_(std::exchange(o.release_, nullptr)) {}
  OwnedRef& operator=(OwnedRef&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      release_ = std::exchange(o.release_, nullptr);
    }
    return *this;
  }
  OwnedRef(const OwnedRef&) = delete;
  OwnedRef& operator=(const OwnedRef&) = delete;
  ~OwnedRef() { reset(); }

  void* get() const { return p_; }
  // The caller takes over the reference.
  void* release() {
    release_ = nullptr;
    return std::exchange(p_, nullptr);
  }
  void reset() {
    if (p_ && release_) release_(p_);
    p_ = nullptr;
    release_ = nullptr;
  }

 private:
  void* p_ = nullptr;
  Release release_ = nullptr;
};

}  // namespace torchinfer
