#include "engine/engine_thread.h"

#include <condition_variable>
#include <deque>
#include <mutex>

namespace torchinfer {

struct EngineThread::Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::packaged_task<void()>> tasks;
  bool stop = false;

  void loop() {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !tasks.empty(); });
      if (tasks.empty()) return;  // stop, with nothing left to run
      std::packaged_task<void()> task = std::move(tasks.front());
      tasks.pop_front();
      lk.unlock();
      task();  // its exception goes to its future
      lk.lock();
    }
  }
};

EngineThread::EngineThread() : queue_(std::make_shared<Queue>()) {
  // The thread holds the queue too: a detached thread still needs it.
  thread_ = std::thread([q = queue_] { q->loop(); });
  id_ = thread_.get_id();
}

EngineThread::~EngineThread() {
  {
    std::lock_guard<std::mutex> lk(queue_->mu);
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  if (is_current())
    thread_.detach();
  else
    thread_.join();
}

std::future<void> EngineThread::post(std::function<void()> fn) {
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> lk(queue_->mu);
    queue_->tasks.push_back(std::move(task));
  }
  queue_->cv.notify_all();
  return done;
}

void EngineThread::call(std::function<void()> fn) {
  post(std::move(fn)).get();
}

}  // namespace torchinfer
