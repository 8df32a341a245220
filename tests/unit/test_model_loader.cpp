// load_model: which batch sizes get warmed up for a batcher's batch size,
// that the load reports progress over exactly those, and that a size left
// unwarmed still runs and gives each frame its own result.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "engine/engine.h"
#include "model/model_loader.h"
#include "test_paths.h"

using namespace torchinfer;

namespace {

EngineOptions identity_options() {
  EngineOptions o;
  o.model_path = test::model_path("identity.pt");
  o.input_width = 8;
  o.input_height = 6;
  o.warmup_runs = 2;
  o.precision = Precision::kFp32;
  return o;
}

ModelConfig identity_config() {
  ModelConfig c;
  c.input_width = 8;
  c.input_height = 6;
  return c;
}

}  // namespace

TEST(ModelLoaderWarmup, PowersOfTwoBelowTheBatchSizeAndItLargestFirst) {
  EXPECT_EQ(warmup_batch_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(warmup_batch_sizes(2), (std::vector<int>{2, 1}));
  EXPECT_EQ(warmup_batch_sizes(3), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(warmup_batch_sizes(5), (std::vector<int>{5, 4, 2, 1}));
  EXPECT_EQ(warmup_batch_sizes(8), (std::vector<int>{8, 4, 2, 1}));
  EXPECT_EQ(warmup_batch_sizes(33), (std::vector<int>{33, 32, 16, 8, 4, 2, 1}));
  EXPECT_EQ(warmup_batch_sizes(64), (std::vector<int>{64, 32, 16, 8, 4, 2, 1}));
}

TEST(ModelLoaderWarmup, NeverEmptyForABadBatchSize) {
  // The engine refuses an empty list; batch-size is validated before this.
  EXPECT_EQ(warmup_batch_sizes(0), (std::vector<int>{1}));
  EXPECT_EQ(warmup_batch_sizes(-3), (std::vector<int>{1}));
}

TEST(ModelLoaderWarmup, ProgressCountsOnlyTheWarmedSizes) {
  EngineOptions o = identity_options();
  std::vector<int> done, totals;
  o.on_progress = [&](const LoadProgress& p) {
    if (p.stage != LoadProgress::Stage::kWarmup) return;
    done.push_back(p.done);
    totals.push_back(p.total);
  };
  const auto m = load_model(o, identity_config(), 6);
  EXPECT_EQ(done, (std::vector<int>{0, 1, 2, 3, 4}));  // sizes 6, 4, 2, 1
  EXPECT_EQ(totals, (std::vector<int>(5, 4)));
  EXPECT_EQ(m->engine->options().warmup_batch_sizes, (std::vector<int>{6, 4, 2, 1}));
  EXPECT_GT(m->batch_ms, 0);
}

TEST(ModelLoaderWarmup, AnUnwarmedSizeGivesEachFrameItsOwnResult) {
  const auto m = load_model(identity_options(), identity_config(), 6);
  const int n = 5;  // not warmed: a partial batch at EOS
  const std::size_t per = m->slot_bytes / sizeof(float);
  AlignedBuffer in(m->slot_bytes * 6);
  for (int k = 0; k < n; ++k)
    for (std::size_t i = 0; i < per; ++i) in.data<float>()[k * per + i] = 10.f * k + i % 7;
  const auto out = m->run(in.data(), n);
  ASSERT_EQ(out->tensors()[0].dims, (std::vector<std::int64_t>{n, 3, 6, 8}));
  for (int k = 0; k < n; ++k) {
    const TensorView t = out->frame(k)[0];
    ASSERT_EQ(t.elements(), per);
    // NCHW out of NHWC in: channel 0 of pixel (0,0) and channel 2 of (0,0).
    EXPECT_FLOAT_EQ(t.f32()[0], 10.f * k) << k;
    EXPECT_FLOAT_EQ(t.f32()[2 * 48], 10.f * k + 2) << k;
  }
}
