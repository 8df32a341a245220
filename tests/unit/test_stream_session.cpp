// The per-stream session with a fake model: which frames are inferred
// (interval, skip/block), the order frames and events leave in, reuse of the
// latest result, flushing mid-batch, draining at the end of a stream, a
// reload between batches and an inference error. Each frame is a 2x2 RGB
// image of one grey value; the fake model reads that value back from the
// preprocessed slot, so a test sees exactly which frames went into which
// batch.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "frame_accounting.h"
#include "grey_model.h"
#include "stream/stream_session.h"

using namespace torchinfer;
using namespace std::chrono_literals;

namespace {

constexpr int kSide = test::kModelSide;

using FakeModel = test::GreyModel;

// A frame as the element would hand it over: its pixels, and a token the
// session returns in order. Releasing the token counts the reference.
struct Frame {
  int value = 0;
  std::array<std::uint8_t, kSide * kSide * 3> pixels{};
  explicit Frame(int v) : value(v) { pixels.fill(static_cast<std::uint8_t>(v)); }
};

std::atomic<int> g_released{0};

OwnedRef token(int value) {
  return OwnedRef(new int(value), [](void* p) {
    delete static_cast<int*>(p);
    ++g_released;
  });
}

int value_of(const StreamOutput& out) {
  return *static_cast<int*>(out.obj.get());
}

SessionOptions options(int interval = 1) {
  SessionOptions o;
  o.inference_interval = interval;
  o.preprocess_for = test::preprocess_to(kSide);
  return o;
}

std::shared_ptr<Batcher> batcher(FakeModel& fake, int batch,
                                 std::chrono::microseconds timeout = 600s) {
  BatcherOptions bo;
  bo.batch_size = batch;
  bo.timeout = timeout;
  return std::make_shared<Batcher>(fake.make(), bo);
}

struct MapCounts {
  int maps = 0, unmaps = 0;
};

// Counts map/unmap calls (in `counts`, which outlives the pixels the session
// owns); `readable` false plays a buffer too short for its caps.
struct Pixels : FramePixels {
  Frame frame;
  bool readable = true;
  MapCounts* counts;
  Pixels(int v, MapCounts* c) : frame(v), counts(c) {}
  bool map(FrameView* v) override {
    ++counts->maps;
    if (!readable) return false;
    v->format = PixelFormat::kRGB;
    v->width = kSide;
    v->height = kSide;
    v->planes[0] = frame.pixels.data();
    v->strides[0] = kSide * 3;
    return true;
  }
  void unmap() override { ++counts->unmaps; }
};

SubmitResult submit(StreamSession& s, int value, int width = kSide, int* maps = nullptr) {
  MapCounts c;
  SubmitResult r =
      s.submit_frame(token(value), width, kSide, static_cast<std::uint64_t>(value) * 1000,
                     std::make_unique<Pixels>(value, &c));
  EXPECT_EQ(c.maps, c.unmaps) << "every mapped frame is unmapped before its slot is committed";
  if (maps) *maps += c.maps;
  return r;
}

struct Popped {
  int value;
  bool is_event;
  bool inferred;
  std::uint64_t result_pts;  // kNoTimestamp without results
  std::string error;
};

Popped pop(StreamSession& s) {
  std::optional<StreamOutput> out = s.pop();
  EXPECT_TRUE(out);
  if (!out) return {-1, false, false, kNoTimestamp, {}};
  s.finish(*out);
  return {value_of(*out), out->is_event, out->inferred,
          out->results ? out->results->pts : kNoTimestamp, out->error};
}

class StreamSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { g_released = 0; }
  // Every test's frames add up, whatever it left in flight, and once the
  // run stops nothing is left in flight: a frame that leaked shows here.
  void TearDown() override {
    EXPECT_TRUE(test::frames_add_up(test::counts_of(session.snapshot(false))));
    session.stop();
    EXPECT_TRUE(test::frames_add_up(test::counts_of(session.snapshot(false)), test::Settled::kYes));
  }
  FakeModel fake;
  StreamSession session;
  void begin(int batch, int interval = 1, bool skip = false) {
    session.start(batcher(fake, batch), options(interval));
    session.set_skip_when_busy(skip);
    session.resume();
  }
};

}  // namespace

TEST_F(StreamSessionTest, FramesLeaveInOrderWithTheirOwnResults) {
  begin(2);
  for (int v = 1; v <= 4; ++v) EXPECT_EQ(submit(session, v).status, SubmitStatus::kQueued);
  for (int v = 1; v <= 4; ++v) {
    Popped p = pop(session);
    EXPECT_EQ(p.value, v);
    EXPECT_TRUE(p.inferred);
    EXPECT_EQ(p.result_pts, static_cast<std::uint64_t>(v) * 1000);
  }
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1, 2}, {3, 4}}));
  const StatsSnapshot snap = session.snapshot(false);
  EXPECT_EQ(snap.frames_in, 4u);
  EXPECT_EQ(snap.frames_out, 4u);
  EXPECT_EQ(snap.inferred, 4u);
  EXPECT_EQ(session.frames_inferred(), 4u);
  EXPECT_DOUBLE_EQ(snap.mean_batch_fill, 2.0);
}

TEST_F(StreamSessionTest, IntervalInfersEveryNthAndReusesTheLatestResult) {
  begin(1, 3);
  int maps = 0;
  std::vector<SubmitStatus> st;
  for (int v = 1; v <= 7; ++v) st.push_back(submit(session, v, kSide, &maps).status);
  EXPECT_EQ(st, (std::vector<SubmitStatus>{SubmitStatus::kQueued, SubmitStatus::kSkipped,
                                           SubmitStatus::kSkipped, SubmitStatus::kQueued,
                                           SubmitStatus::kSkipped, SubmitStatus::kSkipped,
                                           SubmitStatus::kQueued}));
  EXPECT_EQ(maps, 3) << "only inferred frames are mapped";
  const std::uint64_t expect_pts[] = {1000, 1000, 1000, 4000, 4000, 4000, 7000};
  for (int v = 1; v <= 7; ++v) {
    Popped p = pop(session);
    EXPECT_EQ(p.value, v);
    EXPECT_EQ(p.inferred, v % 3 == 1);
    EXPECT_EQ(p.result_pts, expect_pts[v - 1]);
  }
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1}, {4}, {7}}));
  const StatsSnapshot snap = session.snapshot(false);
  EXPECT_EQ(snap.skipped, 4u);
  EXPECT_EQ(snap.inferred, 3u);
  EXPECT_EQ(session.frames_inferred(), 3u) << "reused results are not counted";
}

// Two streams through one session (a funnel sends each one's stream-start
// when it switches): inference-interval counts each stream's own frames,
// and a frame not inferred carries its own stream's latest result.
TEST_F(StreamSessionTest, StreamsKeepTheirOwnIntervalAndLatestResult) {
  begin(1, 2);
  for (int f = 0; f < 4; ++f) {
    session.begin_stream("a");
    submit(session, 10 + f);
    session.begin_stream("b");
    submit(session, 20 + f);
  }
  const std::uint64_t result_pts[] = {10000, 20000, 10000, 20000, 12000, 22000, 12000, 22000};
  for (int k = 0; k < 8; ++k) {
    Popped p = pop(session);
    EXPECT_EQ(p.inferred, k % 4 < 2) << k;
    EXPECT_EQ(p.result_pts, result_pts[k]) << k;
  }
  // Before, frames alternated between the streams and interval 2 inferred
  // stream a only, stream b carrying a's results.
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{10}, {20}, {12}, {22}}));
}

TEST_F(StreamSessionTest, ResultOfAnotherFrameSizeIsNotReused) {
  begin(1, 2);
  submit(session, 1);
  submit(session, 2, kSide + 2);  // a caps change between frames
  EXPECT_TRUE(pop(session).inferred);
  Popped p = pop(session);
  EXPECT_FALSE(p.inferred);
  EXPECT_EQ(p.result_pts, kNoTimestamp);
}

TEST_F(StreamSessionTest, SkipWhenBusySkipsAndCountsInsteadOfWaiting) {
  fake.hold = true;
  begin(1, 1, true);
  EXPECT_EQ(submit(session, 1).status, SubmitStatus::kQueued);  // running, held
  fake.wait_inside(1);
  EXPECT_EQ(submit(session, 2).status, SubmitStatus::kQueued);  // second buffer
  EXPECT_EQ(submit(session, 3).status, SubmitStatus::kBusy);
  fake.release();
  EXPECT_TRUE(pop(session).inferred);
  EXPECT_TRUE(pop(session).inferred);
  Popped p = pop(session);
  EXPECT_EQ(p.value, 3);
  EXPECT_FALSE(p.inferred);
  EXPECT_EQ(p.result_pts, 2000u) << "a skipped frame carries the latest result";
  const StatsSnapshot snap = session.snapshot(false);
  EXPECT_EQ(snap.skipped_for(SkipReason::kBusy), 1u);
  EXPECT_EQ(snap.dropped, 0u) << "it left: skipped, not dropped";
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap), test::Settled::kYes));
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1}, {2}}));
}

TEST_F(StreamSessionTest, BlockWaitsForTheModelAndInfersEveryFrame) {
  fake.hold = true;
  begin(1, 1, false);
  submit(session, 1);
  fake.wait_inside(1);
  submit(session, 2);
  auto third = std::async(std::launch::async, [&] { return submit(session, 3).status; });
  EXPECT_EQ(third.wait_for(50ms), std::future_status::timeout);
  fake.release();
  EXPECT_EQ(third.get(), SubmitStatus::kQueued);
  for (int v = 1; v <= 3; ++v) EXPECT_TRUE(pop(session).inferred);
  EXPECT_EQ(session.snapshot(false).dropped, 0u);
}

TEST_F(StreamSessionTest, EventsKeepTheirPlaceBetweenFrames) {
  begin(4);
  submit(session, 1);
  ASSERT_TRUE(session.push_event(token(100)));
  submit(session, 2);
  ASSERT_TRUE(session.push_event(token(101)));  // e.g. EOS
  session.submit_partial();                     // what EOS does
  Popped a = pop(session), e1 = pop(session), b = pop(session), e2 = pop(session);
  EXPECT_EQ(a.value, 1);
  EXPECT_TRUE(e1.is_event);
  EXPECT_EQ(e1.value, 100);
  EXPECT_EQ(b.value, 2);
  EXPECT_EQ(e2.value, 101);
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1, 2}}));
}

TEST_F(StreamSessionTest, DrainRunsThePartialBatchAndWaitsUntilEmpty) {
  begin(8);
  submit(session, 1);
  submit(session, 2);
  std::thread out([&] {
    pop(session);
    pop(session);
  });
  EXPECT_TRUE(session.drain());
  out.join();
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1, 2}}));
}

TEST_F(StreamSessionTest, FlushMidBatchDropsEverythingAndUnblocks) {
  fake.hold = true;
  begin(1);
  submit(session, 1);
  fake.wait_inside(1);
  submit(session, 2);
  auto blocked = std::async(std::launch::async, [&] { return submit(session, 3).status; });
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout);
  session.set_flushing();
  EXPECT_EQ(blocked.get(), SubmitStatus::kFlushing);
  EXPECT_FALSE(session.pop());
  EXPECT_FALSE(session.drain());
  EXPECT_EQ(submit(session, 4).status, SubmitStatus::kFlushing);
  EXPECT_EQ(g_released, 4) << "every queued and refused reference released";
  fake.release();

  // After the flush the stream starts afresh: no result carried over.
  session.resume();
  ASSERT_EQ(submit(session, 5).status, SubmitStatus::kQueued);
  Popped p = pop(session);
  EXPECT_EQ(p.value, 5);
  EXPECT_TRUE(p.inferred);
  // 1 and 2 were queued, 3 waited for a slot or queue space: all dropped;
  // 4 came while flushing and never entered.
  const StatsSnapshot snap = session.snapshot(false);
  EXPECT_EQ(snap.frames_in, 4u);
  EXPECT_EQ(snap.dropped, 3u);
  EXPECT_EQ(snap.inferred, 1u);
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap), test::Settled::kYes));
}

// Item 2 of issue 24: a frame counted in is, at every reading, inferred,
// skipped for a reason, dropped, or in flight, never nothing. Before, a
// frame inside the session counted as in and nothing else (the server's
// "5.6 % neither inferred nor counted" were frames in the queue).
TEST_F(StreamSessionTest, EveryFrameIsInferredSkippedDroppedOrInFlight) {
  fake.hold = true;
  begin(2, 2);
  submit(session, 1);  // slot 0 of the first batch
  submit(session, 2);  // not due (interval 2)
  submit(session, 3);  // fills the batch: it runs, held
  fake.wait_inside(1);
  StatsSnapshot snap = session.snapshot(false);
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap)));
  // 16 batch buffers of 2 frames, every 2nd frame inferred, 8 events; plus
  // the frame being submitted and the one being sent.
  EXPECT_EQ(session.capacity(), 16u * 2 * 2 + 8);
  EXPECT_EQ(snap.in_flight_limit, 16u * 2 * 2 + 8 + 2);
  EXPECT_EQ(snap.frames_in, 3u);
  EXPECT_EQ(snap.in_flight, 3u) << "a skipped frame counts when it leaves, in order";
  EXPECT_EQ(snap.inferred + snap.skipped + snap.dropped, 0u);
  fake.release();
  for (int v = 1; v <= 3; ++v) EXPECT_EQ(pop(session).value, v);
  snap = session.snapshot(false);
  EXPECT_EQ(snap.inferred, 2u);
  EXPECT_EQ(snap.skipped_for(SkipReason::kInterval), 1u);
  EXPECT_EQ(snap.in_flight, 0u);

  submit(session, 4);  // not due
  submit(session, 5);  // a partial batch, waiting for its timeout
  snap = session.snapshot(false);
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap)));
  EXPECT_EQ(snap.in_flight, 2u);
  session.set_flushing();  // a seek: both never leave
  session.resume();
  snap = session.snapshot(false);
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap), test::Settled::kYes));
  EXPECT_EQ(snap.frames_in, 5u);
  EXPECT_EQ(snap.inferred, 2u);
  EXPECT_EQ(snap.skipped, 1u);
  EXPECT_EQ(snap.dropped, 2u);
  EXPECT_EQ(snap.frames_out, 3u);
}

TEST_F(StreamSessionTest, AFrameTheOwnerDoesNotSendOnCountsAsDropped) {
  fake.fail = true;
  begin(1);
  submit(session, 1);
  std::optional<StreamOutput> out = session.pop();
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->error.empty());
  session.discard(*out);  // the element posts the error and pushes nothing
  const StatsSnapshot snap = session.snapshot(false);
  EXPECT_EQ(snap.dropped, 1u);
  EXPECT_EQ(snap.frames_out, 0u);
  EXPECT_TRUE(test::frames_add_up(test::counts_of(snap), test::Settled::kYes));
}

// resume() is documented "from any thread": here it comes from a third
// thread while the streaming thread is inside submit_frame() and the output
// thread inside pop() (the thread checks, on in tests, abort if it touched
// either half). What it forgets, each half forgets at the first frame
// submitted after it, in stream order. Before, resume() cleared the output
// thread's latest result at once, so frame 6 below carried frame 5's result,
// computed before the resume.
TEST_F(StreamSessionTest, ResumeFromAnyThreadForgetsFromTheNextFrameOn) {
  fake.hold = true;
  begin(1, 2);
  submit(session, 1);  // runs, held
  fake.wait_inside(1);
  submit(session, 2);  // not due
  submit(session, 3);  // the second buffer
  submit(session, 4);  // not due
  auto streaming = std::async(std::launch::async, [&] { return submit(session, 5).status; });
  std::promise<void> popping;
  auto output = std::async(std::launch::async, [&] {
    popping.set_value();
    std::vector<Popped> out;
    for (int k = 0; k < 5; ++k) out.push_back(pop(session));
    return out;
  });
  popping.get_future().wait();
  EXPECT_EQ(streaming.wait_for(50ms), std::future_status::timeout) << "inside submit_frame";
  session.resume();
  fake.release();
  EXPECT_EQ(streaming.get(), SubmitStatus::kQueued);
  const std::vector<Popped> before = output.get();
  const std::uint64_t want_before[] = {1000, 1000, 3000, 3000, 5000};
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(before[k].result_pts, want_before[k]) << "frame " << k + 1 << " came before it";
  EXPECT_EQ(submit(session, 6).status, SubmitStatus::kSkipped);
  Popped p = pop(session);
  EXPECT_EQ(p.value, 6);
  EXPECT_EQ(p.result_pts, kNoTimestamp) << "no result from before the resume";
}

// The check itself: a second thread entering a half another thread is in
// aborts, naming the half.
TEST_F(StreamSessionTest, TwoThreadsInsideTheStreamingHalfAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("TORCHINFER_THREAD_CHECKS", "1", 1);
        fake.hold = true;
        begin(1);
        submit(session, 1);
        fake.wait_inside(1);
        submit(session, 2);
        std::thread blocked([&] { submit(session, 3); });  // waits inside submit_frame()
        std::this_thread::sleep_for(100ms);
        session.drain();  // the streaming half, from another thread
        blocked.join();
      },
      "streaming-thread half entered by thread");
}

TEST_F(StreamSessionTest, ReloadBetweenBatchesSwitchesModelsCleanly) {
  begin(2);
  submit(session, 1);
  session.batcher()->replace_model(fake.make(2));  // closes the partial batch
  submit(session, 2);
  submit(session, 3);
  std::vector<int> generations;
  for (int v = 1; v <= 3; ++v) {
    std::optional<StreamOutput> out = session.pop();
    ASSERT_TRUE(out && out->inferred);
    generations.push_back(out->results->slots.at(0).result.model->generation);
    session.finish(*out);  // as the element does: a popped frame leaves, counted
  }
  EXPECT_EQ(generations, (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{1}, {2, 3}}));
}

TEST_F(StreamSessionTest, ForwardErrorReachesTheFrameAndStopsTheStream) {
  fake.fail = true;
  begin(1);
  submit(session, 1);
  Popped p = pop(session);
  EXPECT_EQ(p.error, "forward failed");
  EXPECT_FALSE(p.inferred);
  session.stop_output(-5, true);  // the element posts the error and stops
  EXPECT_EQ(submit(session, 2).status, SubmitStatus::kStopped);
  EXPECT_EQ(session.output_code(), -5);
}

TEST_F(StreamSessionTest, UnreadableFrameGivesUpItsSlotAndKeepsOrder) {
  begin(2);
  submit(session, 1);
  MapCounts counts;
  auto unreadable = std::make_unique<Pixels>(2, &counts);
  unreadable->readable = false;
  EXPECT_EQ(session.submit_frame(token(2), kSide, kSide, 2000, std::move(unreadable)).status,
            SubmitStatus::kMapFailed);
  submit(session, 3);
  session.submit_partial();
  Popped a = pop(session), b = pop(session), c = pop(session);
  EXPECT_EQ(a.value, 1);
  EXPECT_EQ(b.value, 2);
  EXPECT_FALSE(b.inferred);
  EXPECT_EQ(b.result_pts, 1000u);
  EXPECT_EQ(c.value, 3);
  EXPECT_TRUE(c.inferred);
}

TEST_F(StreamSessionTest, StatsSnapshotComesOncePerInterval) {
  SessionOptions o = options();
  o.stats_interval = 1s;
  session.start(batcher(fake, 1), o);
  session.resume();
  submit(session, 1);
  std::optional<StreamOutput> first = session.pop();
  ASSERT_TRUE(first);
  EXPECT_FALSE(session.finish(*first)) << "interval not yet elapsed";
  std::this_thread::sleep_for(1050ms);
  submit(session, 2);
  std::optional<StreamOutput> second = session.pop();
  ASSERT_TRUE(second);
  std::optional<StatsSnapshot> snap = session.finish(*second);
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->frames_out, 2u);
  EXPECT_EQ(snap->inferred, 2u);
}

TEST_F(StreamSessionTest, StopReleasesQueuedReferencesAndTheBatcher) {
  begin(4);
  submit(session, 1);
  submit(session, 2);
  std::weak_ptr<Batcher> weak = session.batcher();
  session.stop();
  EXPECT_EQ(g_released, 2);
  EXPECT_TRUE(weak.expired());
  EXPECT_FALSE(session.batcher());
}
