// The batcher, the in-order queue, the shared-model registry and the stats
// window, with a fake model: each test checks exact batch composition, order
// and what happens on stop/cancel. Also built with TSan (scripts/sanitize.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "batcher_fakes.h"
#include "batching/batcher.h"
#include "batching/in_order_queue.h"
#include "batching/model_registry.h"
#include "common/error.h"
#include "common/stream_stats.h"
#include "engine/engine_thread.h"

using namespace torchinfer;
using namespace torchinfer::test;
using namespace std::chrono_literals;

TEST(Batcher, FullBatchesRunInFillOrderWithTheirFrames) {
  FakeModel fake;
  Results res;
  {
    Batcher b(fake.make(), opts(4));
    for (int v = 0; v < 8; ++v) put(b, v, res);
    res.wait_for(8);
  }
  ASSERT_EQ(fake.batches.size(), 2u);
  EXPECT_EQ(fake.batches[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(fake.batches[1], (std::vector<int>{4, 5, 6, 7}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(res.got[i].first, i);
    EXPECT_EQ(res.got[i].second.index, i % 4);
    EXPECT_EQ(res.got[i].second.batch_fill, 4);
    EXPECT_TRUE(res.got[i].second.error.empty());
    EXPECT_EQ(res.got[i].second.model->generation, 1);
  }
}

TEST(Batcher, PartialBatchRunsOnSubmitOrTimeout) {
  FakeModel fake;
  Results res;
  Batcher b(fake.make(), opts(4));
  put(b, 7, res);
  put(b, 8, res);
  b.submit_partial();
  res.wait_for(2);
  EXPECT_EQ(fake.batches.at(0), (std::vector<int>{7, 8}));
  EXPECT_EQ(res.got[1].second.batch_fill, 2);

  Batcher t(fake.make(), opts(4, 5ms));
  put(t, 9, res);
  res.wait_for(3);  // no submit: only the timeout can run it
  EXPECT_EQ(fake.batches.at(1), (std::vector<int>{9}));
}

TEST(Batcher, NullCallbackDiscardsAFrameButKeepsTheBatch) {
  FakeModel fake;
  Results res;
  Batcher b(fake.make(), opts(2));
  Batcher::Slot s = b.acquire(true, kNotCancelled);
  b.commit(s, nullptr);
  put(b, 5, res);
  res.wait_for(1);
  EXPECT_EQ(res.got.size(), 1u);
  EXPECT_EQ(res.got[0].second.index, 1);
}

TEST(Batcher, BlocksWhenBothBuffersAreBusyAndCancels) {
  FakeModel fake;
  fake.hold = true;
  Results res;
  BatcherOptions o = opts(1);
  o.buffers = 2;
  Batcher b(fake.make(), o);
  put(b, 1, res);  // buffer 0: running, held
  fake.wait_inside(1);
  put(b, 2, res);  // buffer 1: closed, waiting for the worker
  EXPECT_FALSE(b.acquire(false, kNotCancelled)) << "no free buffer: non-blocking fails";

  std::atomic<bool> cancel{false};
  auto blocked = std::async(std::launch::async, [&] { return bool(b.acquire(true, cancel)); });
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout);
  cancel = true;
  b.wake();
  EXPECT_FALSE(blocked.get());
  fake.release();
  res.wait_for(2);
  EXPECT_EQ(res.got[0].first, 1);
  EXPECT_EQ(res.got[1].first, 2);
}

namespace {

// Puts frames at batch 1 behind a held forward() until a non-blocking
// acquire fails; returns how many batches were queued behind the running one.
int queued_until_refused(double batch_ms, BatcherOptions o) {
  FakeModel fake;
  fake.hold = true;
  Results res;
  auto model = std::const_pointer_cast<LoadedModel>(fake.make());
  model->batch_ms = batch_ms;
  Batcher b(model, o);
  put(b, 0, res);
  fake.wait_inside(1);  // batch 0 runs: nothing queued behind it yet
  int queued = 0;
  for (;;) {
    Batcher::Slot s = b.acquire(false, kNotCancelled);
    if (!s) break;
    b.commit(s, res.cb(++queued));
    if (queued > 100) break;
  }
  fake.release();
  res.wait_for(static_cast<std::size_t>(queued) + 1);
  for (int i = 0; i <= queued; ++i) EXPECT_EQ(res.got[i].first, i) << "fill order";
  return queued;
}

}  // namespace

TEST(Batcher, QueuesBatchesWhileTheirWaitFitsTheBudget) {
  BatcherOptions o = opts(1);
  o.queue_budget = 25ms;
  // 10 ms a batch: the 2nd queued batch starts 20 ms out, the 3rd 30 ms.
  EXPECT_EQ(queued_until_refused(10, o), 3) << "one free, then 10 and 20 ms <= 25 ms";
  // A model slower than the budget: one batch behind the running one, as
  // with two buffers, then skip.
  EXPECT_EQ(queued_until_refused(100, o), 1);
  // The buffer count caps it whatever the budget.
  o.buffers = 3;
  EXPECT_EQ(queued_until_refused(1, o), 2);
  // A batch time never measured: one behind the running batch, no more.
  o.buffers = 8;
  EXPECT_EQ(queued_until_refused(0, o), 1);
  o.buffers = 8;
  o.queue_budget = 0ms;
  EXPECT_EQ(queued_until_refused(10, o), 1);
}

namespace {

// Batch 1, 25 ms budget, 4 buffers, a load-time estimate of `estimate_ms`:
// one full batch runs taking at least `first_takes`, then, behind a held
// second one, how many batches may queue.
int queued_after_a_batch_took(double estimate_ms, std::chrono::milliseconds first_takes) {
  FakeModel fake;
  Results res;
  auto model = std::const_pointer_cast<LoadedModel>(fake.make());
  model->batch_ms = estimate_ms;
  BatcherOptions o = opts(1);
  o.queue_budget = 25ms;
  o.buffers = 4;
  Batcher b(model, o);
  fake.hold = true;
  put(b, 0, res);
  fake.wait_inside(1);
  std::this_thread::sleep_for(first_takes);
  fake.release();
  res.wait_for(1);
  fake.hold = true;
  put(b, 1, res);
  fake.wait_inside(1);
  int queued = 0;
  while (Batcher::Slot s = b.acquire(false, kNotCancelled)) {
    b.commit(s, res.cb(2 + queued));
    if (++queued > 100) break;
  }
  fake.release();
  res.wait_for(static_cast<std::size_t>(queued) + 2);
  return queued;
}

}  // namespace

// Batches that took longer than the load-time estimate (preprocessing on
// the batch, a loaded machine) shrink the queue: the budget is for real
// waits.
TEST(Batcher, BatchesThatRanSlowerThanMeasuredQueueLess) {
  EXPECT_EQ(queued_after_a_batch_took(1, 60ms), 1)
      << "60 ms a batch: nothing beyond the one behind the running batch";
}

// An estimate far too high (the load scales it from 8 frames) stops
// counting once a full batch showed what a batch takes.
TEST(Batcher, BatchesThatRanFasterThanEstimatedQueueMore) {
  EXPECT_EQ(queued_after_a_batch_took(1000, 0ms), 3)
      << "the buffer count, not the 1000 ms estimate, limits the queue";
}

TEST(Batcher, TwoBuffersAlwaysServeASlowModelAsBefore) {
  FakeModel fake;
  Results res;
  auto model = std::const_pointer_cast<LoadedModel>(fake.make());
  model->batch_ms = 1000;  // far over the budget
  BatcherOptions o = opts(1);
  o.queue_budget = 25ms;
  Batcher b(model, o);
  // The first batch is closed but not running yet (its frame is still being
  // preprocessed): a second buffer is still there.
  Batcher::Slot first = b.acquire(false, kNotCancelled);
  ASSERT_TRUE(first);
  Batcher::Slot second = b.acquire(false, kNotCancelled);
  ASSERT_TRUE(second);
  EXPECT_FALSE(b.acquire(false, kNotCancelled)) << "a third waits for the budget";
  int v = 1;
  std::memcpy(first.data, &v, sizeof v);
  b.commit(first, res.cb(1));
  v = 2;
  std::memcpy(second.data, &v, sizeof v);
  b.commit(second, res.cb(2));
  res.wait_for(2);
  EXPECT_EQ(res.got[0].first, 1);
  EXPECT_EQ(res.got[1].first, 2);
}

TEST(Batcher, LargeBatchesKeepFewerBuffers) {
  FakeModel fake;
  const std::vector<std::pair<int, int>> expected{{1, 32}, {2, 16}, {4, 8},
                                                  {8, 4},  {16, 2}, {64, 2}};
  for (auto [batch, buffers] : expected) {
    Batcher b(fake.make(), opts(batch));
    EXPECT_EQ(b.options().buffers, buffers) << "batch " << batch;
  }
  BatcherOptions one = opts(4);
  one.buffers = 1;
  EXPECT_EQ(Batcher(fake.make(), one).options().buffers, 1) << "a smaller choice is kept";
}

// A lane that names its own thread (LoadedModel::post, an engine's thread
// in the element) runs every batch there: its worker is that thread.
TEST(Batcher, ForwardRunsOnTheLanesOwnThread) {
  std::mutex mu;
  std::multiset<std::thread::id> threads;
  FakeModel fake;
  EngineThread own;
  std::thread::id own_id;
  own.call([&] { own_id = std::this_thread::get_id(); });
  auto model = std::const_pointer_cast<LoadedModel>(fake.make());
  auto record = model->run;
  model->run = [&, record](const void* data, int n) {
    {
      std::lock_guard<std::mutex> lk(mu);
      threads.insert(std::this_thread::get_id());
    }
    return record(data, n);
  };
  model->post = [&own](std::function<void()> fn) { return own.post(std::move(fn)); };
  Results res;
  {
    Batcher b(model, opts(2, 1ms));
    for (int v = 0; v < 9; ++v) put(b, v, res);
    b.submit_partial();
    res.wait_for(9);
  }
  EXPECT_EQ(threads.size(), 5u);
  EXPECT_EQ(threads.count(own_id), 5u) << "every batch on the lane's own thread";
  for (int i = 0; i < 9; ++i) EXPECT_EQ(res.got[i].first, i);
  ASSERT_EQ(fake.batches.size(), 5u);
  EXPECT_EQ(fake.batches[4], (std::vector<int>{8}));
  // The batcher's loop ended with it: the thread takes other work again.
  bool ran = false;
  own.call([&] { ran = true; });
  EXPECT_TRUE(ran);
}

// A reload moves the work to the new model's own thread; batches filled for
// the old model still run on the old one's, in fill order.
TEST(Batcher, AReloadRunsEachModelsBatchesOnItsOwnThread) {
  FakeModel fake;
  EngineThread first, second;
  std::thread::id first_id, second_id;
  first.call([&] { first_id = std::this_thread::get_id(); });
  second.call([&] { second_id = std::this_thread::get_id(); });
  std::mutex mu;
  std::vector<std::pair<int, std::thread::id>> ran;  // (generation, thread)
  auto make = [&](int generation, EngineThread& thread) {
    auto m = std::const_pointer_cast<LoadedModel>(fake.make(generation));
    auto record = m->run;
    m->run = [&, record, generation](const void* data, int n) {
      {
        std::lock_guard<std::mutex> lk(mu);
        ran.emplace_back(generation, std::this_thread::get_id());
      }
      return record(data, n);
    };
    m->post = [&thread](std::function<void()> fn) { return thread.post(std::move(fn)); };
    m->batch_ms = 1;  // measured: batches may queue behind the held one
    return m;
  };
  Results res;
  {
    Batcher b(make(1, first), opts(2));
    {
      std::lock_guard<std::mutex> lk(fake.mu);
      fake.hold = true;
    }
    put(b, 0, res);
    put(b, 1, res);  // batch {0,1} runs on the old model, held
    fake.wait_inside(1);
    put(b, 2, res);
    put(b, 3, res);  // {2,3} queued for the old model
    put(b, 4, res);  // {4} filling: closed by the reload, still the old model's
    b.replace_model(make(2, second));
    put(b, 5, res);
    put(b, 6, res);  // {5,6}: the new model's
    fake.release();
    res.wait_for(7);
  }
  ASSERT_EQ(ran.size(), 4u);
  const std::vector<std::pair<int, std::thread::id>> expected{
      {1, first_id}, {1, first_id}, {1, first_id}, {2, second_id}};
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4}, {5, 6}}));
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(res.got[i].first, i) << "one lane: results in fill order across the switch";
    EXPECT_EQ(res.got[i].second.model->generation, i < 5 ? 1 : 2);
  }
}

TEST(Batcher, ForwardErrorReachesEveryFrame) {
  FakeModel fake;
  fake.fail = true;
  Results res;
  Batcher b(fake.make(), opts(2));
  put(b, 1, res);
  put(b, 2, res);
  res.wait_for(2);
  for (auto& [v, r] : res.got) EXPECT_EQ(r.error, "forward failed");
}

TEST(Batcher, DestroyedMidInferenceWaitsForItAndDropsTheRest) {
  FakeModel fake;
  fake.hold = true;
  Results res;
  auto b = std::make_unique<Batcher>(fake.make(), opts(1));
  put(*b, 1, res);
  fake.wait_inside(1);
  put(*b, 2, res);  // queued behind the held batch
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    fake.release();
  });
  b.reset();
  releaser.join();
  // The running batch completed; the queued one never ran.
  EXPECT_EQ(fake.batches.size(), 1u);
  EXPECT_EQ(res.got.size(), 1u);
}

TEST(Batcher, ReplacedModelStartsWithTheNextBatch) {
  FakeModel fake;
  Results res;
  Batcher b(fake.make(1), opts(4));
  put(b, 1, res);
  put(b, 2, res);
  b.replace_model(fake.make(2, 128));  // runs 1,2 on the old model now
  put(b, 3, res);
  b.submit_partial();
  res.wait_for(3);
  EXPECT_EQ(fake.batches.at(0), (std::vector<int>{1, 2}));
  EXPECT_EQ(fake.batches.at(1), (std::vector<int>{3}));
  EXPECT_EQ(res.got[0].second.model->generation, 1);
  EXPECT_EQ(res.got[2].second.model->generation, 2);
  EXPECT_EQ(b.model()->generation, 2);
}

TEST(Batcher, ManyStreamsShareBatchesAndKeepTheirOrder) {
  FakeModel fake;
  Results res;
  constexpr int kStreams = 4, kFrames = 50;
  {
    Batcher b(fake.make(), opts(4, 1ms));
    std::vector<std::thread> streams;
    for (int s = 0; s < kStreams; ++s)
      streams.emplace_back([&, s] {
        for (int i = 0; i < kFrames; ++i) put(b, s * 1000 + i, res);
      });
    for (auto& t : streams) t.join();
    b.submit_partial();
    res.wait_for(kStreams * kFrames);
  }
  std::vector<int> next(kStreams, 0);
  for (auto& [v, r] : res.got) {
    ASSERT_EQ(v % 1000, next[v / 1000]) << "stream " << v / 1000 << " out of order";
    ++next[v / 1000];
  }
  for (int n : next) EXPECT_EQ(n, kFrames);
}

TEST(Batcher, RejectsBadOptions) {
  FakeModel fake;
  EXPECT_THROW(Batcher(fake.make(), opts(0)), Error);
  BatcherOptions negative = opts(1);
  negative.queue_budget = -1ms;
  EXPECT_THROW(Batcher(fake.make(), negative), Error);
  EXPECT_THROW(Batcher(nullptr, opts(1)), Error);
  auto no_run = std::make_shared<LoadedModel>();
  no_run->slot_bytes = 4;
  EXPECT_THROW(Batcher(no_run, opts(1)), Error);
}

TEST(InOrderQueue, ItemsLeaveInOrderOnlyWhenReady) {
  InOrderQueue<int> q(8);
  const auto a = q.push(1, false, true);
  const auto b = q.push(2, true, true);
  ASSERT_TRUE(a && b);
  auto popped = std::async(std::launch::async, [&] { return q.pop(); });
  EXPECT_EQ(popped.wait_for(30ms), std::future_status::timeout) << "head not ready";
  EXPECT_TRUE(q.complete(*a, [](int& v) { v = 10; }));
  EXPECT_EQ(popped.get(), 10);
  EXPECT_EQ(q.pop(), 2);
}

// An item waiting for several results (one per region of a frame) stays
// until the last one: the completion function says when it is ready.
TEST(InOrderQueue, ItemWithSeveralResultsLeavesAfterTheLast) {
  InOrderQueue<int> q(8);
  const auto a = q.push(0, false, true);
  const auto b = q.push(100, true, true);
  ASSERT_TRUE(a && b);
  auto add = [](int n) {
    return [n](int& v) {
      v += n;
      return v == 6;  // ready once 1 + 2 + 3 arrived
    };
  };
  EXPECT_TRUE(q.complete(*a, add(3)));
  EXPECT_TRUE(q.complete(*a, add(1)));
  auto popped = std::async(std::launch::async, [&] { return q.pop(); });
  EXPECT_EQ(popped.wait_for(30ms), std::future_status::timeout) << "two of three results in";
  EXPECT_TRUE(q.complete(*a, add(2)));
  EXPECT_EQ(popped.get(), 6);
  EXPECT_EQ(q.pop(), 100);
}

TEST(InOrderQueue, FullQueueBlocksOrRefuses) {
  InOrderQueue<int> q(2);
  ASSERT_TRUE(q.push(1, true, true));
  ASSERT_TRUE(q.push(2, true, true));
  EXPECT_FALSE(q.push(3, true, false));
  auto pusher = std::async(std::launch::async, [&] { return q.push(3, true, true).has_value(); });
  EXPECT_EQ(pusher.wait_for(30ms), std::future_status::timeout);
  EXPECT_EQ(q.pop(), 1);
  EXPECT_TRUE(pusher.get());
  EXPECT_EQ(q.size(), 2u);
}

TEST(InOrderQueue, FlushDropsItemsWakesWaitersAndForgetsOldResults) {
  InOrderQueue<int> q(1);
  const auto a = q.push(1, false, true);
  auto pusher = std::async(std::launch::async, [&] { return q.push(2, true, true).has_value(); });
  auto popper = std::async(std::launch::async, [&] { return q.pop().has_value(); });
  const std::vector<int> dropped = q.set_flushing(true);
  EXPECT_EQ(dropped, (std::vector<int>{1}));
  EXPECT_FALSE(pusher.get());
  EXPECT_FALSE(popper.get());
  EXPECT_FALSE(q.wait_empty());
  q.set_flushing(false);
  const auto b = q.push(3, false, true);
  // A result for an item from before the flush finds nothing.
  EXPECT_FALSE(q.complete(*a, [](int& v) { v = 99; }));
  EXPECT_TRUE(q.complete(*b, [](int&) {}));
  EXPECT_EQ(q.pop(), 3);
  EXPECT_TRUE(q.wait_empty());
}

TEST(ModelRegistry, SameIdSharesOneBatcherUntilTheLastUserLeaves) {
  FakeModel fake;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::make_shared<Batcher>(fake.make(), opts(2));
  };
  const SharingKey key{{"model", "a.pt"}, {"batch-size", "2"}};
  auto& reg = ModelRegistry::instance();
  auto a = reg.acquire("unit-cam", key, make);
  auto b = reg.acquire("unit-cam", key, make);
  EXPECT_EQ(a, b);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(reg.users("unit-cam"), 2);
  a.reset();
  b.reset();
  EXPECT_EQ(reg.users("unit-cam"), 0);
  auto c = reg.acquire("unit-cam", key, make);
  EXPECT_EQ(made, 2) << "a new batcher after everyone left";
}

TEST(ModelRegistry, ConflictingSettingsNameTheSetting) {
  FakeModel fake;
  auto make = [&] { return std::make_shared<Batcher>(fake.make(), opts(2)); };
  auto& reg = ModelRegistry::instance();
  auto a = reg.acquire("unit-conflict", {{"model", "a.pt"}, {"batch-size", "2"}}, make);
  try {
    reg.acquire("unit-conflict", {{"model", "a.pt"}, {"batch-size", "4"}}, make);
    FAIL() << "conflict not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_NE(std::string(e.what()).find("same batch-size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'2'"), std::string::npos) << e.what();
  }
}

TEST(StreamStats, PercentilesAndCounters) {
  LatencyWindow w(4);
  EXPECT_EQ(w.percentile(50), 0);
  for (double v : {5.0, 1.0, 3.0, 2.0, 4.0}) w.add(v);  // 5 falls out of the window
  EXPECT_EQ(w.count(), 4u);
  EXPECT_EQ(w.percentile(50), 2.0);
  EXPECT_EQ(w.percentile(100), 4.0);
  EXPECT_EQ(w.percentile(0), 1.0);

  StreamStats s;
  const auto t0 = StreamStats::Clock::now();
  for (int i = 0; i < 5; ++i) s.frame_in();
  const SkipReason interval = SkipReason::kInterval;
  s.frame_dropped();
  s.batch(4, 1.0, 2.0, 3.0);
  s.batch(2, 1.0, 2.0, 3.0);
  s.frame_out(t0, nullptr);
  s.frame_out(t0 + 500ms, nullptr);
  s.frame_out(t0 + 600ms, &interval);
  const StatsSnapshot snap = s.snapshot(t0 + 1500ms, true);
  EXPECT_EQ(snap.frames_in, 5u);
  EXPECT_EQ(snap.frames_out, 3u);
  EXPECT_EQ(snap.inferred, 2u);
  EXPECT_EQ(snap.skipped, 1u);
  EXPECT_EQ(snap.skipped_for(SkipReason::kInterval), 1u);
  EXPECT_EQ(snap.skipped_for(SkipReason::kBusy), 0u);
  EXPECT_EQ(snap.dropped, 1u);
  EXPECT_EQ(snap.in_flight, 1u) << "5 in, 3 out, 1 dropped";
  EXPECT_DOUBLE_EQ(snap.mean_batch_fill, 3.0);
  EXPECT_DOUBLE_EQ(snap.fps, 2.0);
  EXPECT_DOUBLE_EQ(snap.inference.p50, 3.0);
  EXPECT_EQ(s.snapshot(t0 + 2s, false).fps, 0.0) << "rate restarts after a reset";
}

// Sharers hear of a reload through their subscription, once per
// replace_model(), until the subscription ends (also from inside the call).
TEST(Batcher, SubscribersAreToldOfEachReloadUntilTheyUnsubscribe) {
  FakeModel fake;
  Batcher b(fake.make(), opts(1));
  std::vector<int> first, second;
  int own_calls = 0;
  ModelListeners::Subscription sub1 = b.subscribe(
      [&](const std::shared_ptr<const LoadedModel>& m) { first.push_back(m->generation); });
  ModelListeners::Subscription own;
  own = b.subscribe([&](const std::shared_ptr<const LoadedModel>&) {
    ++own_calls;
    own.reset();  // a sharer stopped from inside the call
  });
  {
    ModelListeners::Subscription sub2 = b.subscribe(
        [&](const std::shared_ptr<const LoadedModel>& m) { second.push_back(m->generation); });
    b.replace_model(fake.make(2));
  }
  b.replace_model(fake.make(3));
  EXPECT_EQ(first, (std::vector<int>{2, 3}));
  EXPECT_EQ(second, (std::vector<int>{2}));
  EXPECT_EQ(own_calls, 1);
}
