// A batcher over a model with several lanes (lanes=K): K batches in
// forward() at once, each on its own lane, the queue rules counted per lane,
// worker numbers unique across lanes, and a stream session putting results
// that finish out of order back in order. Also built with TSan
// (scripts/sanitize.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "batcher_fakes.h"
#include "common/error.h"
#include "grey_model.h"
#include "stream/stream_session.h"

using namespace torchinfer;
using namespace torchinfer::test;
using namespace std::chrono_literals;

namespace {

// Lane 0 runs on `a`, lane 1 on `b`: a test sees which lane ran a batch.
std::shared_ptr<LoadedModel> two_lanes(FakeModel& a, FakeModel& b, double batch_ms = 0) {
  auto m = std::const_pointer_cast<LoadedModel>(a.make());
  auto second = std::const_pointer_cast<LoadedModel>(b.make());
  second->worker_base = 1;
  m->more_lanes.push_back(second);
  m->batch_ms = batch_ms;
  return m;
}

bool saw(const FakeModel& fake, int value) {
  for (const auto& batch : fake.batches)
    for (int v : batch)
      if (v == value) return true;
  return false;
}

}  // namespace

TEST(BatcherLanes, TwoBatchesRunAtOnceEachOnItsOwnLane) {
  FakeModel a, b;
  a.hold = b.hold = true;
  Results res;
  Batcher batcher(two_lanes(a, b), opts(1));
  EXPECT_EQ(batcher.lanes(), 2);
  put(batcher, 1, res);
  put(batcher, 2, res);
  a.wait_inside(1);
  b.wait_inside(1);  // both in forward() at the same time
  // Two running, one filling: as one lane keeps one buffer behind its batch.
  put(batcher, 3, res);
  EXPECT_FALSE(batcher.acquire(false, kNotCancelled))
      << "no measured batch time: nothing queues beyond one batch behind the lanes";
  a.release();
  b.release();
  res.wait_for(3);
  std::set<int> values;
  for (auto& [v, r] : res.got) {
    values.insert(v);
    EXPECT_TRUE(r.error.empty());
    EXPECT_EQ(r.batch_fill, 1);
    EXPECT_TRUE(saw(r.lane == 0 ? a : b, v)) << "frame " << v << " reported lane " << r.lane;
    EXPECT_FALSE(saw(r.lane == 0 ? b : a, v)) << "frame " << v << " ran on one lane only";
  }
  EXPECT_EQ(values, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(a.batches.size() + b.batches.size(), 3u);
}

TEST(BatcherLanes, QueuedBatchesWaitTheirShareOfTheLanes) {
  // 10 ms a batch, 25 ms budget, two lanes: q closed batches wait q x 10 / 2
  // ms, so 5 may queue (25 ms) where one lane allows 2.
  FakeModel a, b;
  a.hold = b.hold = true;
  Results res;
  BatcherOptions o = opts(1);
  o.queue_budget = 25ms;
  o.buffers = 16;
  Batcher batcher(two_lanes(a, b, 10), o);
  put(batcher, 0, res);
  put(batcher, 1, res);
  a.wait_inside(1);
  b.wait_inside(1);
  int queued = 0;
  while (Batcher::Slot s = batcher.acquire(false, kNotCancelled)) {
    batcher.commit(s, res.cb(2 + queued));
    if (++queued > 100) break;
  }
  // The filling batch closes when full (batch 1): after 6 closed the 7th
  // cannot open (6 x 10 / 2 = 30 ms > 25 ms).
  EXPECT_EQ(queued, 6) << "5 closed within the budget, then a 6th opened and closed";
  a.release();
  b.release();
  res.wait_for(static_cast<std::size_t>(queued) + 2);
}

TEST(BatcherLanes, BatchPreprocessingNumbersWorkersAcrossLanes) {
  FakeModel a, b;
  auto m = two_lanes(a, b);
  // Each lane: two workers; fn(i, worker) serially.
  auto serial = [](int n, const std::function<void(int, int)>& fn) {
    for (int i = 0; i < n; ++i) fn(i, i % 2);
  };
  m->threads = 2;
  m->parallel_for = serial;
  auto second = std::const_pointer_cast<LoadedModel>(m->more_lanes[0]);
  second->threads = 2;
  second->worker_base = 2;
  second->parallel_for = serial;
  EXPECT_EQ(m->total_threads(), 4);
  std::mutex mu;
  std::map<int, std::set<int>> workers;  // frame -> workers that prepared it
  Results res;
  {
    Batcher batcher(m, opts(1));
    for (int v = 0; v < 8; ++v) {
      Batcher::Slot s = batcher.acquire(true, kNotCancelled);
      ASSERT_TRUE(s);
      batcher.commit(
          s, res.cb(v),
          [&, v](void* dst, const LoadedModel&, int worker, int band, int bands) -> std::string {
            EXPECT_EQ(bands, 2) << "one frame, two threads: two bands";
            if (band == 0) std::memcpy(dst, &v, sizeof v);
            std::lock_guard<std::mutex> lk(mu);
            workers[v].insert(worker);
            return {};
          });
    }
    res.wait_for(8);
  }
  for (auto& [v, r] : res.got) {
    const std::set<int> expected = r.lane == 0 ? std::set<int>{0, 1} : std::set<int>{2, 3};
    EXPECT_EQ(workers[v], expected) << "frame " << v << " on lane " << r.lane;
    EXPECT_TRUE(saw(r.lane == 0 ? a : b, v)) << "the slot was prepared before its forward()";
  }
}

TEST(BatcherLanes, ReloadKeepsTheLaneCount) {
  FakeModel a, b;
  Results res;
  Batcher batcher(two_lanes(a, b), opts(1));
  EXPECT_THROW(batcher.replace_model(a.make(2)), Error) << "one lane for two";
  EXPECT_THROW(batcher.replace_model(nullptr), Error);
  FakeModel c, d;
  auto next = two_lanes(c, d);
  next->generation = 2;
  batcher.replace_model(next);
  put(batcher, 5, res);
  res.wait_for(1);
  EXPECT_EQ(res.got[0].second.model->generation, 2);
  EXPECT_TRUE(saw(c, 5) || saw(d, 5));
  EXPECT_FALSE(saw(a, 5) || saw(b, 5));
}

// Issue 37: cameras sharing a model deliver their frames together. With
// batch 1 and the default options, a burst of 8 behind two busy lanes must
// queue (its wait, 8 x 2 ms / 2 lanes, is far within the 40 ms budget):
// with 8 buffers 2 of every 8 were skipped and the lanes then sat idle.
// Only the buffer count stops it here: 32 buffers, 2 running.
TEST(BatcherLanes, ABurstOfCamerasBehindBusyLanesQueuesWithinTheBudget) {
  FakeModel a, b;
  a.hold = b.hold = true;
  Results res;
  Batcher batcher(two_lanes(a, b, 2), opts(1));
  put(batcher, 0, res);
  put(batcher, 1, res);
  a.wait_inside(1);
  b.wait_inside(1);
  int queued = 0;
  while (Batcher::Slot s = batcher.acquire(false, kNotCancelled)) {
    std::memcpy(s.data, &queued, sizeof queued);
    batcher.commit(s, res.cb(2 + queued));
    if (++queued > 100) break;
  }
  EXPECT_EQ(queued, kMaxQueuedSlots - 2) << "every buffer but the two running";
  a.release();
  b.release();
  res.wait_for(static_cast<std::size_t>(queued) + 2);
  std::set<int> values;
  for (const auto& r : res.got) values.insert(r.first);
  EXPECT_EQ(values.size(), static_cast<std::size_t>(queued) + 2) << "each frame's result once";
}

TEST(BatcherLanes, KeepsABufferPerLaneBeyondTheFrameCap) {
  FakeModel a, b;
  std::deque<FakeModel> more;
  auto m = two_lanes(a, b);
  for (int lanes = 3; lanes <= 4; ++lanes) {
    m->more_lanes.push_back(more.emplace_back().make());
    EXPECT_EQ(Batcher(m, opts(64)).options().buffers, lanes + 1) << lanes << " lanes";
  }
}

TEST(BatcherLanes, DestroyedWithBothLanesBusyWaitsForBoth) {
  FakeModel a, b;
  a.hold = b.hold = true;
  Results res;
  auto batcher = std::make_unique<Batcher>(two_lanes(a, b), opts(1));
  put(*batcher, 1, res);
  put(*batcher, 2, res);
  a.wait_inside(1);
  b.wait_inside(1);
  put(*batcher, 3, res);  // behind them, never runs
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    a.release();
    b.release();
  });
  batcher.reset();
  releaser.join();
  EXPECT_EQ(res.got.size(), 2u);
  EXPECT_FALSE(saw(a, 3) || saw(b, 3));
}

// A stream whose second frame finishes first (its lane released first)
// still leaves in order.
TEST(BatcherLanes, SessionPutsOutOfOrderResultsBackInOrder) {
  GreyModel a, b;
  a.hold = b.hold = true;
  auto m = std::const_pointer_cast<LoadedModel>(a.make());
  m->more_lanes.push_back(b.make());
  BatcherOptions bo;
  bo.batch_size = 1;
  StreamSession session;
  SessionOptions so;
  so.preprocess_for = preprocess_to(kModelSide);
  session.start(std::make_shared<Batcher>(m, bo), std::move(so));
  session.resume();
  auto submit = [&](int v) {
    struct Pixels : FramePixels {
      std::vector<std::uint8_t> px;
      explicit Pixels(int v) : px(kModelSide * kModelSide * 3, static_cast<std::uint8_t>(v)) {}
      bool map(FrameView* view) override {
        view->format = PixelFormat::kRGB;
        view->width = view->height = kModelSide;
        view->planes[0] = px.data();
        view->strides[0] = kModelSide * 3;
        return true;
      }
      void unmap() override {}
    };
    return session
        .submit_frame(OwnedRef(new int(v), [](void* p) { delete static_cast<int*>(p); }),
                      kModelSide, kModelSide, static_cast<std::uint64_t>(v) * 1000,
                      std::make_unique<Pixels>(v))
        .status;
  };
  ASSERT_EQ(submit(10), SubmitStatus::kQueued);
  ASSERT_EQ(submit(20), SubmitStatus::kQueued);
  a.wait_inside(1);
  b.wait_inside(1);
  auto first = [&](GreyModel& g) {
    std::lock_guard<std::mutex> lk(g.mu);
    return g.batches.at(0).at(0);
  };
  GreyModel& second_frame = first(a) == 20 ? a : b;
  GreyModel& first_frame = first(a) == 20 ? b : a;
  second_frame.release();
  auto popped = std::async(std::launch::async, [&] {
    std::vector<std::pair<int, std::uint64_t>> out;
    for (int i = 0; i < 2; ++i) {
      std::optional<StreamOutput> o = session.pop();
      if (!o) break;
      out.emplace_back(*static_cast<int*>(o->obj.get()),
                       o->results ? o->results->pts : kNoTimestamp);
      session.finish(*o);
    }
    return out;
  });
  EXPECT_EQ(popped.wait_for(100ms), std::future_status::timeout)
      << "frame 20's result is in, but frame 10 has to leave first";
  first_frame.release();
  const auto out = popped.get();
  EXPECT_EQ(out, (std::vector<std::pair<int, std::uint64_t>>{{10, 10000}, {20, 20000}}));
  session.stop();
}
