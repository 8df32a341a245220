// Checks that state meant for one thread at a time is not entered by two.
//
// GStreamer does not promise one fixed thread per role: a funnel calls
// torchinfer's chain from each upstream's thread (one at a time, under the
// pad's stream lock), and a pad task may resume on another pool thread. So
// the owner is the thread inside a call of the guarded half, for as long as
// the call lasts; a second thread entering meanwhile is the bug, and aborts
// naming the half and both threads.
//
// Active when TORCHINFER_THREAD_CHECKS=1 is set (the test environment sets
// it: tests/meson.build) or in a build without NDEBUG; otherwise a relaxed
// load and nothing else.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

namespace torchinfer {

inline bool thread_checks_enabled() {
#ifndef NDEBUG
  return true;
#else
  static const bool on = [] {
    const char* v = std::getenv("TORCHINFER_THREAD_CHECKS");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
#endif
}

class ThreadOwner {
 public:
  explicit ThreadOwner(const char* what) : what_(what) {}
  ThreadOwner(const ThreadOwner&) = delete;
  ThreadOwner& operator=(const ThreadOwner&) = delete;

  // Held by the calling thread until destroyed; nested scopes of the same
  // thread are fine.
  class Scope {
   public:
    explicit Scope(ThreadOwner& o) : owner_(thread_checks_enabled() ? &o : nullptr) {
      if (owner_) owner_->enter();
    }
    ~Scope() {
      if (owner_) owner_->leave();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ThreadOwner* owner_;
  };

 private:
  void enter() {
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id expected{};
    if (owner_.compare_exchange_strong(expected, me) || expected == me) {
      ++depth_;  // only the owner gets here
      return;
    }
    std::fprintf(stderr,
                 "torchinfer: thread check failed: %s entered by thread %zu while thread %zu "
                 "is inside it\n",
                 what_, std::hash<std::thread::id>{}(me), std::hash<std::thread::id>{}(expected));
    std::abort();
  }
  void leave() {
    if (--depth_ == 0) owner_.store(std::thread::id{});
  }

  const char* what_;
  std::atomic<std::thread::id> owner_{};
  int depth_ = 0;  // the owner's nesting; touched by the owner only
};

// A value only one thread may use at a time, reached through borrow(): the
// Borrow holds the owner check for as long as it lives (the way a
// gst-plugins-rs element borrows its AtomicRefCell'd state).
template <class T>
class ThreadOwned {
 public:
  explicit ThreadOwned(const char* what) : owner_(what) {}

  class Borrow {
   public:
    explicit Borrow(ThreadOwned& o) : scope_(o.owner_), value_(o.value_) {}
    T* operator->() const { return &value_; }
    T& operator*() const { return value_; }

   private:
    ThreadOwner::Scope scope_;
    T& value_;
  };
  Borrow borrow() { return Borrow(*this); }

 private:
  ThreadOwner owner_;
  T value_{};
};

}  // namespace torchinfer
