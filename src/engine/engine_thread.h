// The one thread that owns an engine (engine.h, "Threads"): runs closures
// posted to it, one at a time in the order posted, and hands back their
// results or exceptions. Free of libtorch, so it is testable on its own.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <thread>

namespace torchinfer {

class EngineThread {
 public:
  EngineThread();
  // Waits for what is queued and joins. Called on this very thread (the
  // last owner dropped it from a closure running here), it detaches
  // instead: the thread ends once that closure returns.
  ~EngineThread();
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  // Runs fn here after what is queued; the future holds its exception.
  std::future<void> post(std::function<void()> fn);
  // post() and wait; rethrows fn's exception. Never call it from here.
  void call(std::function<void()> fn);
  bool is_current() const { return std::this_thread::get_id() == id_; }

 private:
  struct Queue;
  std::shared_ptr<Queue> queue_;  // shared with the thread, which may outlive this
  std::thread thread_;
  std::thread::id id_;
};

}  // namespace torchinfer
