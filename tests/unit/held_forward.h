// The part of a fake model's forward() the batching tests steer: it records
// each batch it saw, can be held inside forward() until the test releases
// it, and can be made to fail.
#pragma once

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace torchinfer::test {

struct HeldForward {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int>> batches;  // what each forward() saw
  bool hold = false;
  int inside = 0;  // forward() calls currently held
  bool fail = false;

  // Called from forward() with what it saw; returns once released.
  void enter(std::vector<int> seen) {
    std::unique_lock<std::mutex> lk(mu);
    batches.push_back(std::move(seen));
    ++inside;
    cv.notify_all();
    cv.wait(lk, [&] { return !hold; });
    --inside;
    if (fail) throw std::runtime_error("forward failed");
  }
  void wait_inside(int n) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return inside >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lk(mu);
    hold = false;
    cv.notify_all();
  }
};

}  // namespace torchinfer::test
