// Passing a frame through a StreamSession allocates nothing on the thread
// that submits and pops it once the session has warmed up (issue 16: no
// allocation per frame on the hot path). Its own binary: it replaces the
// global operator new to count calls per thread.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "batching/batcher.h"
#include "grey_model.h"
#include "stream/stream_session.h"

namespace {
thread_local long t_news = 0;
}

void* operator new(std::size_t n) {
  ++t_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace torchinfer;
using namespace std::chrono_literals;

namespace {

constexpr int kSide = test::kModelSide;

struct Pixels : FramePixels {
  std::array<std::uint8_t, 8 * kSide * 3> px{};
  bool map(FrameView* v) override {
    v->format = PixelFormat::kRGB;
    v->width = 8;
    v->height = kSide;
    v->planes[0] = px.data();
    v->strides[0] = 8 * 3;
    return true;
  }
  void unmap() override {}
};

void no_op(void*) {}

// parallel_for on two threads, as an OpenMP team would.
void two_threads(int n, const std::function<void(int, int)>& fn) {
  std::thread other([&] {
    for (int i = 1; i < n; i += 2) fn(i, 1);
  });
  for (int i = 0; i < n; i += 2) fn(i, 0);
  other.join();
}

// Allocations on this thread while `frames` frames are submitted and popped
// one by one, after as many again to warm up (pools, scratch, plans).
// With two lanes each batch may run on either.
// `regions` non-null: inference-region=roi-list with these regions on every
// frame (the element keeps its region vector from frame to frame).
long allocations_per_run(bool deferred, int frames, int lanes = 1,
                         const std::vector<RegionOfInterest>* regions = nullptr) {
  test::GreyModel fake, second;
  auto model = std::make_shared<LoadedModel>(*fake.make());
  model->threads = 2;
  model->parallel_for = two_threads;
  if (lanes == 2) {
    auto lane = std::make_shared<LoadedModel>(*second.make());
    lane->threads = 2;
    lane->parallel_for = two_threads;
    lane->worker_base = 2;
    model->more_lanes.push_back(lane);
  }
  BatcherOptions bo;
  bo.batch_size = 1;
  bo.timeout = 600s;
  SessionOptions so;
  so.preprocess_in_batch = deferred;
  so.preprocess_for = test::preprocess_to(kSide);
  so.region_mode = regions != nullptr;
  so.regions.reclassify_interval = 2;
  StreamSession session;
  session.start(std::make_shared<Batcher>(model, bo), so);
  session.resume();
  // The test's own objects (what the element gets from GStreamer) are made
  // before counting.
  std::vector<std::unique_ptr<FramePixels>> pixels;
  int token = 0;
  for (int i = 0; i < 2 * frames; ++i) pixels.push_back(std::make_unique<Pixels>());
  long before = 0;
  for (int i = 0; i < 2 * frames; ++i) {
    if (i == frames) before = t_news;
    const SubmitResult r =
        session.submit_frame(OwnedRef(&token, no_op), 8, kSide, static_cast<std::uint64_t>(i),
                             std::move(pixels[i]), regions);
    EXPECT_EQ(r.status, SubmitStatus::kQueued);
    std::optional<StreamOutput> out = session.pop();
    EXPECT_TRUE(out && out->inferred);
    if (out) session.finish(*out);
  }
  const long counted = t_news - before;
  session.stop();
  return counted;
}

}  // namespace

// Two tracked objects (inferred every 2nd frame, their latest result
// reused in between), one untracked region, one filtered out by size.
std::vector<RegionOfInterest> some_regions() {
  std::vector<RegionOfInterest> out(4);
  const int xs[] = {0, 2, 4, 6};
  for (int k = 0; k < 4; ++k) {
    out[k].x = xs[k];
    out[k].width = k == 3 ? 0 : 2;
    out[k].height = kSide;
    out[k].label = k == 2 ? "a label longer than the short-string buffer" : "part";
    if (k < 2) out[k].object_id = 7 + k;
  }
  return out;
}

TEST(FrameAllocations, RoiListAllocatesNothingPerFrame) {
  const std::vector<RegionOfInterest> regions = some_regions();
  EXPECT_EQ(allocations_per_run(false, 200, 1, &regions), 0) << "streaming-thread";
  EXPECT_EQ(allocations_per_run(true, 200, 1, &regions), 0) << "inference-threads";
  EXPECT_EQ(allocations_per_run(false, 200, 2, &regions), 0) << "two lanes, streaming-thread";
  EXPECT_EQ(allocations_per_run(true, 200, 2, &regions), 0) << "two lanes, inference-threads";
}

TEST(FrameAllocations, TheStreamingThreadAllocatesNothingPerFrame) {
  EXPECT_EQ(allocations_per_run(false, 200), 0) << "preprocess-on=streaming-thread";
  EXPECT_EQ(allocations_per_run(true, 200), 0) << "preprocess-on=inference-threads";
  EXPECT_EQ(allocations_per_run(false, 200, 2), 0) << "two lanes, streaming-thread";
  EXPECT_EQ(allocations_per_run(true, 200, 2), 0) << "two lanes, inference-threads";
}
