// The batcher tests' fake model and result collector: the fake's forward()
// records the frames it saw (one int per slot) and can be held inside
// forward() until the test releases it.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "batching/batcher.h"
#include "held_forward.h"

namespace torchinfer::test {

// A model whose "forward" records the frames it saw (one int per slot) and
// can be held inside forward() until the test releases it.
struct FakeModel : test::HeldForward {
  std::shared_ptr<const LoadedModel> make(int generation = 1, std::size_t slot_bytes = 64) {
    auto m = std::make_shared<LoadedModel>();
    m->slot_bytes = slot_bytes;
    m->generation = generation;
    m->path = "fake" + std::to_string(generation);
    m->run = [this, slot_bytes](const void* data, int n) -> std::shared_ptr<const BatchOutput> {
      std::vector<int> seen;
      for (int k = 0; k < n; ++k) {
        int v;
        std::memcpy(&v, static_cast<const char*>(data) + k * slot_bytes, sizeof v);
        seen.push_back(v);
      }
      enter(std::move(seen));
      return nullptr;
    };
    return m;
  }
};

// Collects results in arrival order.
struct Results {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int, FrameResult>> got;  // (frame value, result)
  FrameCallback cb(int value) {
    return [this, value](FrameResult&& r) {
      std::lock_guard<std::mutex> lk(mu);
      got.emplace_back(value, std::move(r));
      cv.notify_all();
    };
  }
  void wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return got.size() >= n; }))
        << got.size();
  }
};

inline const std::atomic<bool> kNotCancelled{false};

inline void put(Batcher& b, int value, Results& res) {
  Batcher::Slot s = b.acquire(true, kNotCancelled);
  ASSERT_TRUE(s);
  std::memcpy(s.data, &value, sizeof value);
  b.commit(s, res.cb(value));
}

inline BatcherOptions opts(int batch,
                           std::chrono::microseconds timeout = std::chrono::seconds(600)) {
  BatcherOptions o;
  o.batch_size = batch;
  o.timeout = timeout;
  return o;
}

}  // namespace torchinfer::test
