// Preprocessing on the inference threads (preprocess-on=inference-threads):
// the batcher runs each slot's SlotPrepare, split into row bands over the
// model's threads, before forward(); the session keeps frames mapped until
// then and releases them before their results go out.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "batching/batcher.h"
#include "grey_model.h"
#include "stream/stream_session.h"

using namespace torchinfer;
using namespace std::chrono_literals;

namespace {

constexpr int kSide = test::kModelSide;

// parallel_for over `threads` real threads, item i on worker i % threads:
// every worker index is in use at once, as on an OpenMP team.
LoadedModel::ParallelFn threaded(int threads, std::vector<std::pair<int, int>>* calls = nullptr,
                                 std::mutex* mu = nullptr) {
  return [threads, calls, mu](int n, const std::function<void(int, int)>& fn) {
    std::vector<std::thread> team;
    for (int w = 0; w < threads; ++w)
      team.emplace_back([&, w] {
        for (int i = w; i < n; i += threads) {
          if (calls) {
            std::lock_guard<std::mutex> lk(*mu);
            calls->emplace_back(i, w);
          }
          fn(i, w);
        }
      });
    for (std::thread& t : team) t.join();
  };
}

std::shared_ptr<const LoadedModel> with_team(const std::shared_ptr<const LoadedModel>& base,
                                             int threads, LoadedModel::ParallelFn fn) {
  auto m = std::make_shared<LoadedModel>(*base);
  m->threads = threads;
  m->parallel_for = std::move(fn);
  return m;
}

std::atomic<bool> g_not_cancelled{false};

}  // namespace

// ---- Batcher ---------------------------------------------------------------

TEST(BatcherPrepare, SlotsAreSplitIntoBandsOverTheThreadsBeforeForward) {
  test::GreyModel fake;
  std::vector<std::pair<int, int>> calls;
  std::mutex mu;
  BatcherOptions bo;
  bo.batch_size = 3;
  bo.timeout = 600s;
  Batcher b(with_team(fake.make(), 4, threaded(4, &calls, &mu)), bo);
  // (slot, band, bands) of every prepare call.
  std::vector<std::array<int, 3>> bands;
  std::set<int> workers;
  std::vector<FrameResult> results(3);
  std::atomic<int> done{0};
  for (int k = 0; k < 3; ++k) {
    Batcher::Slot s = b.acquire(true, g_not_cancelled);
    ASSERT_TRUE(s);
    b.commit(
        s,
        [&, k](FrameResult&& r) {
          results[k] = std::move(r);
          ++done;
        },
        [&, k](void* dst, const LoadedModel& m, int worker, int band, int n) -> std::string {
          // Band 0 writes the grey value forward() reads back.
          if (band == 0)
            for (int i = 0; i < kSide * kSide * 3; ++i)
              static_cast<float*>(dst)[i] = static_cast<float>(10 + k);
          std::lock_guard<std::mutex> lk(mu);
          bands.push_back({k, band, n});
          workers.insert(worker);
          EXPECT_EQ(m.threads, 4);
          return {};
        });
  }
  while (done < 3) std::this_thread::sleep_for(1ms);
  // 3 frames on 4 threads: 2 bands each, 6 calls, each (slot, band) once.
  ASSERT_EQ(bands.size(), 6u);
  std::set<std::array<int, 3>> unique(bands.begin(), bands.end());
  EXPECT_EQ(unique.size(), 6u);
  for (const auto& c : bands) EXPECT_EQ(c[2], 2);
  EXPECT_EQ(workers, (std::set<int>{0, 1, 2, 3}));
  ASSERT_EQ(fake.batches.size(), 1u);
  EXPECT_EQ(fake.batches[0], (std::vector<int>{10, 11, 12}));
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(results[k].error.empty()) << results[k].error;
    EXPECT_EQ(results[k].index, k);
    EXPECT_EQ(results[k].batch_fill, 3);
    EXPECT_GE(results[k].prepare_ms, 0.0);
  }
}

TEST(BatcherPrepare, AFailedPrepareFailsOnlyItsFrameAndPixelsAreReleasedFirst) {
  test::GreyModel fake;
  BatcherOptions bo;
  bo.batch_size = 2;
  bo.timeout = 600s;
  Batcher b(with_team(fake.make(), 2, threaded(2)), bo);
  auto pixels = std::make_shared<int>(7);
  std::weak_ptr<int> watch = pixels;
  std::vector<FrameResult> results(2);
  std::vector<bool> released_before_result(2, false);
  std::atomic<int> done{0};
  for (int k = 0; k < 2; ++k) {
    Batcher::Slot s = b.acquire(true, g_not_cancelled);
    b.commit(
        s,
        [&, k](FrameResult&& r) {
          released_before_result[k] = watch.expired();
          results[k] = std::move(r);
          ++done;
        },
        [k, held = pixels](void*, const LoadedModel&, int, int, int) -> std::string {
          if (k == 1) throw std::runtime_error("boom");
          return {};
        });
  }
  pixels.reset();
  while (done < 2) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(results[0].error.empty()) << results[0].error;
  EXPECT_EQ(results[1].error, "could not prepare a frame: boom");
  EXPECT_EQ(results[1].output, nullptr);
  EXPECT_TRUE(released_before_result[0]);
  EXPECT_TRUE(released_before_result[1]);
  EXPECT_EQ(fake.batches.size(), 1u) << "the batch still runs for the frame that was prepared";
}

TEST(BatcherPrepare, WithoutATeamPreparesRunOnTheWorkerAsOneBand) {
  test::GreyModel fake;  // no parallel_for
  BatcherOptions bo;
  bo.batch_size = 1;
  bo.timeout = 600s;
  Batcher b(fake.make(), bo);
  std::atomic<int> calls{0}, done{0};
  Batcher::Slot s = b.acquire(true, g_not_cancelled);
  b.commit(
      s, [&](FrameResult&&) { ++done; },
      [&](void*, const LoadedModel&, int worker, int band, int bands) -> std::string {
        EXPECT_EQ(worker, 0);
        EXPECT_EQ(band, 0);
        EXPECT_EQ(bands, 1);
        ++calls;
        return {};
      });
  while (done < 1) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(calls, 1);
}

// ---- StreamSession ---------------------------------------------------------

namespace {

struct MapCounts {
  std::atomic<int> maps{0}, unmaps{0};
};

// A grey frame of `kW` x `kSide` (each column its own grey in region tests).
struct Pixels : FramePixels {
  static constexpr int kW = 8;
  std::array<std::uint8_t, kW * kSide * 3> px{};
  MapCounts* counts;
  bool broken = false;  // maps, but with a null plane: preprocessing fails
  Pixels(int grey, MapCounts* c, bool columns = false) : counts(c) {
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kW; ++x)
        for (int ch = 0; ch < 3; ++ch)
          px[(y * kW + x) * 3 + ch] = static_cast<std::uint8_t>(columns ? 10 * (x + 1) : grey);
  }
  bool map(FrameView* v) override {
    ++counts->maps;
    v->format = PixelFormat::kRGB;
    v->width = kW;
    v->height = kSide;
    v->planes[0] = broken ? nullptr : px.data();
    v->strides[0] = kW * 3;
    return true;
  }
  void unmap() override { ++counts->unmaps; }
};

OwnedRef token(int value) {
  return OwnedRef(new int(value), [](void* p) { delete static_cast<int*>(p); });
}

SessionOptions deferred(bool regions = false) {
  SessionOptions o;
  o.preprocess_in_batch = true;
  o.region_mode = regions;
  o.preprocess_for = test::preprocess_to(kSide);
  return o;
}

// A session preprocessing on a two-thread team, batches of 2.
void start_on_team(StreamSession& session, test::GreyModel& fake, bool regions = false) {
  BatcherOptions bo;
  bo.batch_size = 2;
  bo.timeout = 600s;
  session.start(std::make_shared<Batcher>(with_team(fake.make(), 2, threaded(2)), bo),
                deferred(regions));
  session.resume();
}

RegionOfInterest column(int x) {
  RegionOfInterest r;
  r.x = x;
  r.width = 1;
  r.height = kSide;
  r.label = "part";
  return r;
}

}  // namespace

TEST(StreamDeferred, FramesStayMappedUntilTheirBatchRunsAndKeepTheirOrder) {
  test::GreyModel fake;
  StreamSession session;
  start_on_team(session, fake);
  MapCounts c;
  ASSERT_EQ(
      session.submit_frame(token(1), Pixels::kW, kSide, 1000, std::make_unique<Pixels>(40, &c))
          .status,
      SubmitStatus::kQueued);
  EXPECT_EQ(c.maps, 1);
  EXPECT_EQ(c.unmaps, 0) << "mapped until the batch preprocesses it";
  ASSERT_EQ(
      session.submit_frame(token(2), Pixels::kW, kSide, 2000, std::make_unique<Pixels>(80, &c))
          .status,
      SubmitStatus::kQueued);
  for (int expect : {1, 2}) {
    std::optional<StreamOutput> out = session.pop();
    ASSERT_TRUE(out);
    EXPECT_EQ(*static_cast<int*>(out->obj.get()), expect);
    EXPECT_TRUE(out->inferred);
    EXPECT_TRUE(out->error.empty()) << out->error;
    ASSERT_TRUE(out->results);
    const SlotResult& s = out->results->slots.at(0);
    // 8 x 2 frame -> 2 x 2 input: the transform comes from band 0.
    EXPECT_DOUBLE_EQ(s.transform.scale_x, 2.0 / Pixels::kW);
    EXPECT_DOUBLE_EQ(s.transform.scale_y, 1.0);
    EXPECT_GE(s.preprocess_ms, 0.0);
    session.finish(*out);
  }
  EXPECT_EQ(c.unmaps, 2) << "unmapped before the frames left";
  ASSERT_EQ(fake.batches.size(), 1u);
  EXPECT_EQ(fake.batches[0], (std::vector<int>{40, 80}));
  session.stop();
}

TEST(StreamDeferred, RegionsOfAFrameShareOneMappingAcrossBatches) {
  test::GreyModel fake;
  StreamSession session;
  start_on_team(session, fake, true);
  MapCounts c;
  const std::vector<RegionOfInterest> regions{column(0), column(3), column(6)};
  ASSERT_EQ(session
                .submit_frame(token(1), Pixels::kW, kSide, 1000,
                              std::make_unique<Pixels>(0, &c, true), &regions)
                .status,
            SubmitStatus::kQueued);
  EXPECT_EQ(c.maps, 1);
  session.submit_partial();  // the third region's batch
  std::optional<StreamOutput> out = session.pop();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->error.empty()) << out->error;
  EXPECT_EQ(c.unmaps, 1) << "one mapping, released after the last region's batch";
  ASSERT_EQ(fake.batches.size(), 2u);
  EXPECT_EQ(fake.batches[0], (std::vector<int>{10, 40}));
  EXPECT_EQ(fake.batches[1], (std::vector<int>{70}));
  ASSERT_EQ(out->results->regions.size(), 3u);
  for (const RegionResult& r : out->results->regions) {
    ASSERT_GE(r.slot, 0);
    EXPECT_TRUE(out->results->slots[r.slot].delivered);
  }
  session.finish(*out);
  session.stop();
}

TEST(StreamDeferred, AFrameThePreprocessingRefusesFailsOnItsOwnThread) {
  test::GreyModel fake;
  StreamSession session;
  start_on_team(session, fake);
  MapCounts c;
  auto px = std::make_unique<Pixels>(5, &c);
  px->broken = true;
  const SubmitResult r = session.submit_frame(token(1), Pixels::kW, kSide, 1000, std::move(px));
  EXPECT_EQ(r.status, SubmitStatus::kPrepareFailed);
  EXPECT_EQ(r.error, "missing plane 0");
  EXPECT_EQ(c.unmaps, 1);
  // Its slot was given up: the next frame still runs, the first leaves
  // without results, in order.
  session.submit_frame(token(2), Pixels::kW, kSide, 2000, std::make_unique<Pixels>(9, &c));
  session.submit_partial();
  std::optional<StreamOutput> a = session.pop(), b = session.pop();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*static_cast<int*>(a->obj.get()), 1);
  EXPECT_FALSE(a->inferred);
  EXPECT_EQ(*static_cast<int*>(b->obj.get()), 2);
  EXPECT_TRUE(b->inferred);
  // The given-up slot still runs (its result is discarded): never written.
  ASSERT_EQ(fake.batches.size(), 1u);
  EXPECT_EQ(fake.batches[0], (std::vector<int>{0, 9}));
  session.stop();
}

TEST(StreamDeferred, AutoRuleUsesTheTeamOnlyWhenNoCoreIsSpare) {
  EXPECT_TRUE(preprocess_in_batch_by_default(2, 2));
  EXPECT_TRUE(preprocess_in_batch_by_default(16, 8));
  EXPECT_FALSE(preprocess_in_batch_by_default(1, 2));
  EXPECT_FALSE(preprocess_in_batch_by_default(8, 16));
}

// ---- GRAY16_LE samples above input-bits: a frame's count over its slots
// and their row bands ----

namespace {

// 8 x 2 GRAY16_LE, one value per column.
struct Gray16Pixels : FramePixels {
  std::array<std::uint16_t, Pixels::kW * kSide> px{};
  explicit Gray16Pixels(const std::array<std::uint16_t, Pixels::kW>& columns) {
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < Pixels::kW; ++x) px[y * Pixels::kW + x] = columns[x];
  }
  bool map(FrameView* v) override {
    v->format = PixelFormat::kGRAY16_LE;
    v->width = Pixels::kW;
    v->height = kSide;
    v->planes[0] = reinterpret_cast<const std::uint8_t*>(px.data());
    v->strides[0] = Pixels::kW * 2;
    return true;
  }
  void unmap() override {}
};

}  // namespace

// Regions 0 and 3 are hot (each fills the 2x2 input: 4 pixels clamped), 6
// is not; the first two share a batch (one band each), the third runs alone
// (two bands). A whole frame whose left half is hot: 2 of its 4 pixels,
// prepared in two bands. The frame's count is the sum either way, on the
// inference threads or the streaming thread, and the stats count the
// frames.
TEST(StreamDeferred, ClampedGray16PixelsAddUpOverSlotsAndBands) {
  const std::array<std::uint16_t, Pixels::kW> cols = {5000, 100, 100, 9000, 100, 100, 4095, 100};
  const std::array<std::uint16_t, Pixels::kW> half = {6000, 6000, 6000, 6000, 10, 10, 10, 10};
  for (bool in_batch : {true, false}) {
    for (bool regions : {true, false}) {
      test::GreyModel fake;
      StreamSession session;
      BatcherOptions bo;
      bo.batch_size = 2;
      bo.timeout = 600s;
      SessionOptions so = deferred(regions);
      so.preprocess_in_batch = in_batch;
      so.preprocess_for = [](const ModelConfig&) {
        PreprocessOptions po;
        po.out_width = po.out_height = kSide;
        po.input_bits = 12;
        return po;
      };
      session.start(std::make_shared<Batcher>(with_team(fake.make(), 2, threaded(2)), bo), so);
      session.resume();
      const std::vector<RegionOfInterest> rois{column(0), column(3), column(6)};
      ASSERT_EQ(session
                    .submit_frame(token(1), Pixels::kW, kSide, 1000,
                                  std::make_unique<Gray16Pixels>(regions ? cols : half), &rois)
                    .status,
                SubmitStatus::kQueued);
      session.submit_partial();
      std::optional<StreamOutput> out = session.pop();
      ASSERT_TRUE(out && out->results);
      EXPECT_TRUE(out->inferred);
      const Saturation& s = out->results->saturation;
      EXPECT_EQ(s.pixels, regions ? 8u : 2u) << "in batch " << in_batch << " regions " << regions;
      EXPECT_EQ(s.peak, regions ? 9000u : 6000u) << "in batch " << in_batch;
      session.finish(*out);
      EXPECT_EQ(session.snapshot(false).saturated, 1u);
      // An in-range frame: not counted.
      const std::array<std::uint16_t, Pixels::kW> cool = {4095, 0, 0, 4095, 0, 0, 4095, 0};
      session.submit_frame(token(2), Pixels::kW, kSide, 2000, std::make_unique<Gray16Pixels>(cool),
                           &rois);
      session.submit_partial();
      out = session.pop();
      ASSERT_TRUE(out && out->results);
      EXPECT_FALSE(out->results->saturation.any());
      session.finish(*out);
      EXPECT_EQ(session.snapshot(false).saturated, 1u);
      session.stop();
    }
  }
}
