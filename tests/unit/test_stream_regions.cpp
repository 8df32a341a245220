// Region mode of the stream session (inference-region=roi-list) with a fake
// model: which regions go to batch slots, how a frame with more regions than
// a batch holds fills several batches, reuse of tracked objects' results,
// frames without regions, and the planning rules (filter, clip, size,
// padding). Frames are 8x2 RGB images whose column x holds the grey value
// 10 * (x + 1); a region one column wide preprocesses to that value, which
// the fake model reads back, so a test sees which region went into which
// batch.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "frame_accounting.h"
#include "grey_model.h"
#include "stream/regions.h"
#include "stream/stream_session.h"

using namespace torchinfer;
using namespace std::chrono_literals;

namespace {

constexpr int kW = 8, kH = 2, kOut = test::kModelSide;

using FakeModel = test::GreyModel;

struct MapCounts {
  int maps = 0, unmaps = 0;
};

struct Pixels : FramePixels {
  std::array<std::uint8_t, kW * kH * 3> px{};
  MapCounts* counts;  // outlives the pixels the session owns
  explicit Pixels(MapCounts* c) : counts(c) {
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x)
        for (int c = 0; c < 3; ++c)
          px[(y * kW + x) * 3 + c] = static_cast<std::uint8_t>(10 * (x + 1));
  }
  bool map(FrameView* v) override {
    ++counts->maps;
    v->format = PixelFormat::kRGB;
    v->width = kW;
    v->height = kH;
    v->planes[0] = px.data();
    v->strides[0] = kW * 3;
    return true;
  }
  void unmap() override { ++counts->unmaps; }
};

OwnedRef token(int value) {
  return OwnedRef(new int(value), [](void* p) { delete static_cast<int*>(p); });
}

// One column-wide region at column x (optionally tracked).
RegionOfInterest column(int x, std::optional<std::int64_t> id = {}, const char* label = "part") {
  RegionOfInterest r;
  r.x = x;
  r.y = 0;
  r.width = 1;
  r.height = kH;
  r.label = label;
  r.object_id = id;
  return r;
}

class StreamRegionsTest : public ::testing::Test {
 protected:
  FakeModel fake;
  StreamSession session;
  // Every test's frames add up, whatever it left in flight, and once the
  // run stops nothing is left in flight: a frame that leaked shows here.
  void TearDown() override {
    EXPECT_TRUE(test::frames_add_up(test::counts_of(session.snapshot(false))));
    session.stop();
    EXPECT_TRUE(test::frames_add_up(test::counts_of(session.snapshot(false)), test::Settled::kYes));
  }

  void begin(int batch, RegionOptions ro = {}, int interval = 1, bool skip = false,
             std::chrono::microseconds timeout = 600s) {
    SessionOptions o;
    o.inference_interval = interval;
    o.region_mode = true;
    o.regions = ro;
    o.preprocess_for = test::preprocess_to(kOut);
    BatcherOptions bo;
    bo.batch_size = batch;
    bo.timeout = timeout;
    session.start(std::make_shared<Batcher>(fake.make(), bo), o);
    session.set_skip_when_busy(skip);
    session.resume();
  }
  SubmitResult submit(int value, const std::vector<RegionOfInterest>& regions,
                      int* maps = nullptr) {
    MapCounts c;
    SubmitResult r =
        session.submit_frame(token(value), kW, kH, static_cast<std::uint64_t>(value) * 1000,
                             std::make_unique<Pixels>(&c), &regions);
    EXPECT_EQ(c.maps, c.unmaps);
    if (maps) *maps = c.maps;
    return r;
  }
  // The next frame's region results (fails the test if none).
  std::shared_ptr<const FrameInference> pop(int expect_value) {
    std::optional<StreamOutput> out = session.pop();
    EXPECT_TRUE(out);
    if (!out) return nullptr;
    EXPECT_EQ(*static_cast<int*>(out->obj.get()), expect_value);
    session.finish(*out);
    return out->results;
  }
};

std::vector<RegionFate> fates(const FrameInference& rec) {
  std::vector<RegionFate> out;
  for (const RegionResult& r : rec.regions) out.push_back(r.fate);
  return out;
}

}  // namespace

// ---- planning ------------------------------------------------------------

TEST(PlanRegion, FiltersClipsSizesAndPads) {
  RegionOptions o;
  o.classes = {"bolt"};
  RegionOfInterest r;
  r.label = "nut";
  r.x = 10, r.y = 10, r.width = 20, r.height = 20;
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kFiltered);
  r.label = "bolt";
  RegionResult p = plan_region(r, o, 100, 80);
  EXPECT_EQ(p.fate, RegionFate::kInferred);
  EXPECT_EQ(p.box.x, 10);
  EXPECT_EQ(p.box.width, 20);

  r.x = -5, r.width = 10;  // half outside: clipped
  p = plan_region(r, o, 100, 80);
  EXPECT_EQ(p.fate, RegionFate::kInferred);
  EXPECT_EQ(p.box.x, 0);
  EXPECT_EQ(p.box.width, 5);
  r.x = 100, r.width = 10;  // starts at the right edge
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kOutside);
  r.x = 10, r.width = 0;
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kOutside);
  r.width = -3;
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kOutside);

  o.min_size = 6;
  r.x = 96, r.width = 20;  // 4 px left inside
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kTooSmall);
  r.x = 10, r.width = 6, r.height = 5;
  EXPECT_EQ(plan_region(r, o, 100, 80).fate, RegionFate::kTooSmall);

  o.min_size = 0;
  o.padding = 0.25;
  r.x = 10, r.y = 70, r.width = 10, r.height = 8;  // grows 2.5 / 2 px a side
  p = plan_region(r, o, 100, 80);
  EXPECT_EQ(p.box.x, 7);       // floor(7.5)
  EXPECT_EQ(p.box.width, 16);  // ceil(22.5) - 7
  EXPECT_EQ(p.box.y, 68);
  EXPECT_EQ(p.box.height, 12);  // clipped at the bottom (80)
}

TEST(PlanRegion, ClassListIsTrimmedAndEmptyItemsDropped) {
  EXPECT_EQ(parse_class_list(" bolt, nut ,,washer "),
            (std::vector<std::string>{"bolt", "nut", "washer"}));
  EXPECT_TRUE(parse_class_list("").empty());
  EXPECT_TRUE(parse_class_list(" , ").empty());
}

TEST(ObjectMemory, ForgetsUnseenObjectsAndStaysBounded) {
  ObjectMemory<int> m(20, 3);
  m.put(1, 0, 10);
  m.put(2, 0, 20);
  EXPECT_NE(m.touch(1, 16), nullptr);
  m.forget_stale(32);  // 2 unseen for 32 frames, 1 for 16
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(*m.touch(1, 33), 10);
  m.put(3, 34, 30);
  m.put(4, 35, 40);
  m.put(5, 36, 50);  // a fourth: the least recently seen (1, at 33) goes
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.touch(1, 37), nullptr);
  EXPECT_NE(m.touch(3, 37), nullptr);
  EXPECT_EQ(object_forget_frames(1, 1), 300u);
  EXPECT_EQ(object_forget_frames(100, 2), 800u);
}

// ---- the session -----------------------------------------------------------

TEST_F(StreamRegionsTest, RegionsOfConsecutiveFramesShareBatchesAndFramesMapOnce) {
  begin(4);
  int maps = 0;
  EXPECT_EQ(submit(1, {column(0), column(1), column(2)}, &maps).status, SubmitStatus::kQueued);
  EXPECT_EQ(maps, 1) << "one map per frame, whatever its region count";
  EXPECT_EQ(submit(2, {column(3), column(4)}).status, SubmitStatus::kQueued);
  session.submit_partial();
  auto a = pop(1);
  ASSERT_TRUE(a);
  EXPECT_EQ(fates(*a), (std::vector<RegionFate>(3, RegionFate::kInferred)));
  for (const RegionResult& r : a->regions) EXPECT_TRUE(a->slots[r.slot].delivered);
  auto b = pop(2);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->regions[1].slot, 1);
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{10, 20, 30, 40}, {50}}));
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_TRUE(s.region_mode);
  EXPECT_EQ(s.regions_inferred, 5u);
  EXPECT_EQ(s.inferred, 2u) << "frames-inferred counts frames, not regions";
}

TEST_F(StreamRegionsTest, AFrameWithMoreRegionsThanTheBatchBuffersHoldDoesNotDeadlock) {
  begin(2, {}, 1, false, 1ms);  // 2 buffers x 2 slots, 9 regions
  std::vector<RegionOfInterest> many;
  for (int i = 0; i < 9; ++i) many.push_back(column(i % kW));
  EXPECT_EQ(submit(1, many).status, SubmitStatus::kQueued);
  EXPECT_EQ(submit(2, {column(7)}).status, SubmitStatus::kQueued);
  auto a = pop(1);
  ASSERT_TRUE(a);
  int delivered = 0;
  for (const RegionResult& r : a->regions) delivered += a->slots[r.slot].delivered;
  EXPECT_EQ(delivered, 9);
  EXPECT_TRUE(pop(2));
  std::vector<int> seen;
  for (const auto& batch : fake.batches) seen.insert(seen.end(), batch.begin(), batch.end());
  EXPECT_EQ(seen, (std::vector<int>{10, 20, 30, 40, 50, 60, 70, 80, 10, 80}));
}

TEST_F(StreamRegionsTest, SkipWhenBusyDropsWholeFramesButAdmittedFramesGetEveryRegion) {
  fake.hold = true;
  begin(1, {}, 1, true);
  // Region 1 runs (held), region 2 fills the second buffer, region 3 waits
  // for a free one although the policy is skip: the frame was admitted.
  auto first = std::async(std::launch::async, [&] {
    return submit(1, {column(0), column(1), column(2)}).status;
  });
  fake.wait_inside(1);
  EXPECT_EQ(first.wait_for(50ms), std::future_status::timeout);
  fake.release();
  EXPECT_EQ(first.get(), SubmitStatus::kQueued);
  auto a = pop(1);
  ASSERT_TRUE(a);
  for (const RegionResult& r : a->regions) EXPECT_TRUE(a->slots[r.slot].delivered);

  // A frame arriving while both buffers are busy is dropped, all regions.
  fake.hold = true;
  EXPECT_EQ(submit(2, {column(3)}).status, SubmitStatus::kQueued);
  fake.wait_inside(1);
  EXPECT_EQ(submit(3, {column(4)}).status, SubmitStatus::kQueued);  // second buffer
  EXPECT_EQ(submit(4, {column(5), column(6)}).status, SubmitStatus::kBusy);
  fake.release();
  EXPECT_TRUE(pop(2));
  EXPECT_TRUE(pop(3));
  auto d = pop(4);
  ASSERT_TRUE(d);
  for (const RegionResult& r : d->regions) EXPECT_FALSE(d->slots[r.slot].delivered);
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_EQ(s.regions_dropped, 2u);
  EXPECT_EQ(s.skipped_for(SkipReason::kBusy), 1u);
  EXPECT_EQ(s.dropped, 0u);
}

TEST_F(StreamRegionsTest, TrackedObjectsAreReinferredEveryNthFrameAndReuseInBetween) {
  RegionOptions ro;
  ro.reclassify_interval = 3;
  begin(1, ro, 1, false, 1ms);
  const std::vector<RegionFate> want = {RegionFate::kInferred, RegionFate::kReuse,
                                        RegionFate::kReuse, RegionFate::kInferred,
                                        RegionFate::kReuse};
  const std::uint64_t want_pts[] = {0, 0, 0, 3000, 3000};
  for (int f = 0; f < 5; ++f) submit(f, {column(f, 42), column(0)});
  for (int f = 0; f < 5; ++f) {
    auto rec = pop(f);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->regions[0].fate, want[f]) << "frame " << f;
    EXPECT_EQ(rec->regions[0].reused, want[f] == RegionFate::kReuse);
    ASSERT_GE(rec->regions[0].slot, 0) << "frame " << f;
    EXPECT_EQ(rec->regions[0].result_pts, want_pts[f]);
    EXPECT_EQ(rec->regions[1].fate, RegionFate::kInferred) << "untracked: every frame";
  }
  // The object's own pixels on frames 0 and 3 only.
  EXPECT_EQ(fake.batches,
            (std::vector<std::vector<int>>{{10}, {10}, {10}, {10}, {40}, {10}, {10}}));
  EXPECT_EQ(session.snapshot(false).regions_reused, 3u);
}

TEST_F(StreamRegionsTest, FramesNotInferredReuseTrackedResultsOnly) {
  begin(1, {}, 2, false, 1ms);
  submit(0, {column(1, 9), column(2)});
  submit(1, {column(1, 9), column(2)});
  pop(0);
  auto rec = pop(1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(fates(*rec), (std::vector<RegionFate>{RegionFate::kReuse, RegionFate::kNotInferred}));
  EXPECT_TRUE(rec->regions[0].reused);
  EXPECT_EQ(rec->regions[1].slot, -1);
  EXPECT_EQ(session.snapshot(false).skipped, 1u);
}

TEST_F(StreamRegionsTest, FramesWithoutRegionsPassInOrderWithoutInference) {
  RegionOptions ro;
  ro.classes = {"bolt"};
  begin(2, ro, 1, false, 1ms);
  int maps = 0;
  EXPECT_EQ(submit(1, {}, &maps).status, SubmitStatus::kNoRegions);
  EXPECT_EQ(maps, 0);
  EXPECT_EQ(submit(2, {column(0, {}, "bolt")}).status, SubmitStatus::kQueued);
  EXPECT_EQ(submit(3, {column(0, {}, "nut")}).status, SubmitStatus::kNoRegions);
  for (int v = 1; v <= 3; ++v) EXPECT_TRUE(pop(v));
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{10}}));
  const StatsSnapshot s = session.snapshot(false);
  EXPECT_EQ(s.skipped_for(SkipReason::kNoRegions), 2u);
  EXPECT_EQ(s.regions_filtered, 1u);
  EXPECT_EQ(s.frames_out, 3u);
}

// Two streams through one session (a funnel), both with object id 1: each
// stream's object is inferred on its own pixels and reuses its own result.
TEST_F(StreamRegionsTest, EachStreamRemembersItsOwnObjects) {
  RegionOptions ro;
  ro.reclassify_interval = 2;
  begin(1, ro, 1, false, 1ms);
  for (int f = 0; f < 3; ++f) {
    session.begin_stream("a");
    submit(2 * f, {column(0, 1)});  // grey 10
    session.begin_stream("b");
    submit(2 * f + 1, {column(5, 1)});  // grey 60
  }
  const bool inferred[] = {true, true, false, false, true, true};
  const std::uint64_t result_pts[] = {0, 1000, 0, 1000, 4000, 5000};
  for (int v = 0; v < 6; ++v) {
    auto rec = pop(v);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->regions[0].reused, !inferred[v]) << "frame " << v;
    EXPECT_EQ(rec->regions[0].result_pts, result_pts[v]) << "frame " << v;
  }
  EXPECT_EQ(fake.batches, (std::vector<std::vector<int>>{{10}, {60}, {10}, {60}}));
}

TEST_F(StreamRegionsTest, ASeekForgetsEveryObject) {
  RegionOptions ro;
  ro.reclassify_interval = 100;
  begin(1, ro, 1, false, 1ms);
  submit(0, {column(0, 5)});
  pop(0);
  session.set_flushing();
  session.resume();
  submit(1, {column(0, 5)});
  auto rec = pop(1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->regions[0].fate, RegionFate::kInferred);
  EXPECT_FALSE(rec->regions[0].reused);
}
