// load_model: batch size 1 is the only one warmed, whatever the batch size;
// progress counts its runs, then the timing of batch_ms; unwarmed full and
// partial batches give each frame its own result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
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

TEST(ModelLoaderWarmup, WarmsBatchSizeOneOnlyWhateverTheBatchSize) {
  for (int batch : {1, 2, 6, 64}) {
    const auto m = load_model(identity_options(), identity_config(), batch);
    EXPECT_EQ(m->engine->options().warmup_batch_sizes, (std::vector<int>{1})) << batch;
    // precision=auto decides (and caches) at the full batch, as before.
    EXPECT_EQ(m->engine->options().precision_batch, batch);
  }
}

TEST(ModelLoaderWarmup, ABadBatchSizeCountsAsOne) {
  // The engine refuses an empty list; batch-size is validated before this.
  for (int batch : {0, -3}) {
    const auto m = load_model(identity_options(), identity_config(), batch);
    EXPECT_EQ(m->engine->options().warmup_batch_sizes, (std::vector<int>{1})) << batch;
    EXPECT_EQ(m->engine->options().precision_batch, 1) << batch;
    EXPECT_GT(m->batch_ms, 0) << batch;
  }
}

TEST(ModelLoaderWarmup, ProgressCountsTheWarmUpRuns) {
  EngineOptions o = identity_options();  // warmup_runs 2
  std::vector<std::string> stages;
  std::vector<int> done, totals;
  o.on_progress = [&](const LoadProgress& p) {
    stages.push_back(to_string(p.stage));
    done.push_back(p.done);
    totals.push_back(p.total);
  };
  load_model(o, identity_config(), 6);
  EXPECT_EQ(stages,
            (std::vector<std::string>{"read", "optimize", "warmup", "warmup", "warmup", "timing"}));
  EXPECT_EQ(done, (std::vector<int>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(totals, (std::vector<int>(6, 2)));
}

TEST(ModelLoaderWarmup, TimesTheFullBatchUpToEightFramesElseEight) {
  EXPECT_EQ(timed_batch_size(1), 1);
  EXPECT_EQ(timed_batch_size(6), 6);
  EXPECT_EQ(timed_batch_size(8), 8);
  EXPECT_EQ(timed_batch_size(9), 8);
  EXPECT_EQ(timed_batch_size(64), 8);
  EXPECT_EQ(timed_batch_size(0), 1);
  EXPECT_GT(load_model(identity_options(), identity_config(), 64)->batch_ms, 0);
}

// Only batch 1 is warmed: the timed batch is what finds a model whose
// output has no batch dimension, still at load.
TEST(ModelLoaderWarmupErrors, AModelWithoutABatchDimensionFailsAtLoadSayingBatchSizeOne) {
  EngineOptions o = identity_options();
  o.model_path = test::model_path("stateful_output.pt");  // always returns [1, 1]
  o.input_width = 4;
  o.input_height = 4;
  o.channels = 1;
  ModelConfig c;
  c.input_width = 4;
  c.input_height = 4;
  c.channel_order = ChannelOrder::kGray;
  for (int batch : {2, 64}) {
    try {
      load_model(o, c, batch);
      ADD_FAILURE() << "loaded at batch-size " << batch;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::kModelInvalid) << msg;
      EXPECT_NE(
          msg.find("stateful_output.pt' fails on a batch of " + std::to_string(std::min(batch, 8)) +
                   " frames (batch-size=" + std::to_string(batch) + ")"),
          std::string::npos)
          << msg;
      EXPECT_NE(msg.find("no batch dimension"), std::string::npos) << msg;
      EXPECT_NE(msg.find("needs batch-size=1"), std::string::npos) << msg;
    }
  }
  EXPECT_GT(load_model(o, c, 1)->batch_ms, 0);
}

TEST(ModelLoaderWarmupErrors, AThrowingProgressCallbackDoesNotFailTheLoad) {
  EngineOptions o = identity_options();
  int calls = 0;
  o.on_progress = [&](const LoadProgress&) {
    ++calls;
    throw std::runtime_error("listener broke");
  };
  EXPECT_GT(load_model(o, identity_config(), 6)->batch_ms, 0);
  EXPECT_EQ(calls, 6);  // read, optimize, warmup 0/2, 1/2, 2/2, timing
}

// Neither the full batch nor a partial one is warmed, and neither is padded:
// every frame's output is exactly what a run of that frame alone gives.
TEST(ModelLoaderWarmup, UnwarmedFullAndPartialBatchesEqualSingleFrameRuns) {
  const auto m = load_model(identity_options(), identity_config(), 6);
  const std::size_t per = m->slot_bytes / sizeof(float);
  AlignedBuffer in(m->slot_bytes * 6);
  for (int k = 0; k < 6; ++k)
    for (std::size_t i = 0; i < per; ++i) in.data<float>()[k * per + i] = 3.5f * k - i % 11;
  for (int n : {6, 5, 3}) {
    const auto out = m->run(in.data(), n);
    ASSERT_EQ(out->tensors()[0].dims, (std::vector<std::int64_t>{n, 3, 6, 8}));
    for (int k = 0; k < n; ++k) {
      AlignedBuffer one(m->slot_bytes);
      std::memcpy(one.data(), in.data<float>() + k * per, m->slot_bytes);
      const auto alone = m->run(one.data(), 1);
      const TensorView a = out->frame(k)[0], b = alone->frame(0)[0];
      ASSERT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(std::memcmp(a.data, b.data, a.bytes), 0) << "batch " << n << " frame " << k;
    }
  }
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
