// load_model: batch size 1 is the only one warmed, whatever the batch size;
// progress counts its runs, then the timing of batch_ms; unwarmed full and
// partial batches give each frame its own result; lanes=K loads K copies
// on disjoint cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "common/error.h"
#include "common/sysinfo.h"
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

namespace {

std::vector<int> lane_cores(const LoadedModel& m, int i) {
  return m.lane(i).engine->info().cores;
}

// What the lanes tests check on a one-core machine instead.
void expect_one_core_refuses_two_lanes() {
  EXPECT_THROW(load_model(identity_options(), identity_config(), 1, 1, 2), Error)
      << "one core: two lanes cannot have a core each";
}

}  // namespace

// lanes=2: two engines of the same file, each pinned to its own half of
// the cores, numbering their workers one after the other, giving the same
// result for the same frames.
TEST(ModelLoaderLanes, LanesRunTheSameModelOnDisjointCores) {
  const std::vector<int> allowed = allowed_cpus();
  if (physical_cores(allowed) < 2) return expect_one_core_refuses_two_lanes();
  const auto m = load_model(identity_options(), identity_config(), 4, 1, 2);
  ASSERT_EQ(m->lane_count(), 2);
  const std::vector<int> a = lane_cores(*m, 0), b = lane_cores(*m, 1);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  std::vector<int> both = a;
  both.insert(both.end(), b.begin(), b.end());
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, allowed) << "every allowed CPU in exactly one lane";
  EXPECT_LT(a.back(), b.front()) << "lane 0 takes the lower cores";
  EXPECT_EQ(m->lane(0).threads, physical_cores(a));
  EXPECT_EQ(m->lane(1).threads, physical_cores(b));
  EXPECT_EQ(m->lane(0).worker_base, 0);
  EXPECT_EQ(m->lane(1).worker_base, m->lane(0).threads);
  EXPECT_EQ(m->total_threads(), m->lane(0).threads + m->lane(1).threads);
  EXPECT_NE(m->lane(0).engine, m->lane(1).engine);
  EXPECT_EQ(m->lane(1).slot_bytes, m->slot_bytes);
  EXPECT_EQ(m->lane(1).engine->info().precision, Precision::kFp32);

  AlignedBuffer in(m->slot_bytes * 3);
  const std::size_t per = m->slot_bytes / sizeof(float);
  for (std::size_t i = 0; i < per * 3; ++i) in.data<float>()[i] = 0.25f * (i % 97);
  const auto x = m->lane(0).run(in.data(), 3), y = m->lane(1).run(in.data(), 3);
  const TensorView tx = x->tensors()[0], ty = y->tensors()[0];
  ASSERT_EQ(tx.bytes, ty.bytes);
  EXPECT_EQ(std::memcmp(tx.data, ty.data, tx.bytes), 0);
}

TEST(ModelLoaderLanes, ThreadsAreTheTotalSharedOutOverTheLanes) {
  if (physical_cores(allowed_cpus()) < 2) return expect_one_core_refuses_two_lanes();
  EngineOptions o = identity_options();
  o.threads = 3;
  const auto m = load_model(o, identity_config(), 1, 1, 2);
  EXPECT_EQ(m->lane(0).threads, 2);
  EXPECT_EQ(m->lane(1).threads, 1);
  EXPECT_EQ(m->lane(1).worker_base, 2);
}

// Without a precision to choose (fp32 here) the lanes load side by side and
// lane 0 reports for all.
TEST(ModelLoaderLanes, LanesLoadSideBySideAndTheFirstReports) {
  if (physical_cores(allowed_cpus()) < 2) return expect_one_core_refuses_two_lanes();
  EngineOptions o = identity_options();  // warmup_runs 2
  std::vector<std::string> stages;
  std::vector<double> elapsed;
  o.on_progress = [&](const LoadProgress& p) {
    stages.push_back(to_string(p.stage));
    elapsed.push_back(p.elapsed_ms);
  };
  const auto m = load_model(o, identity_config(), 2, 1, 2);
  EXPECT_EQ(stages,
            (std::vector<std::string>{"read", "optimize", "warmup", "warmup", "warmup", "timing"}));
  EXPECT_TRUE(std::is_sorted(elapsed.begin(), elapsed.end()));
  EXPECT_EQ(m->lane(1).engine->info().precision, Precision::kFp32);
}

TEST(ModelLoaderLanes, BadLaneCountsNameTheFix) {
  auto error_of = [](EngineOptions o, int lanes) -> std::string {
    try {
      load_model(std::move(o), identity_config(), 1, 1, lanes);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid) << e.what();
      return e.what();
    }
    return "loaded";
  };
  EXPECT_EQ(error_of(identity_options(), 0), "lanes=0 is out of range (1..64)");
  EXPECT_EQ(error_of(identity_options(), 65), "lanes=65 is out of range (1..64)");
  EngineOptions one_thread = identity_options();
  one_thread.threads = 1;
  EXPECT_EQ(error_of(one_thread, 2),
            "threads=1 is fewer than lanes=2: each lane needs a thread of its own");
  const std::vector<int> allowed = allowed_cpus();
  EngineOptions one_core = identity_options();
  one_core.cores = std::to_string(allowed.front());
  EXPECT_EQ(error_of(one_core, 2), "lanes=2 needs a core per lane, but CPUs " +
                                       std::to_string(allowed.front()) +
                                       " are 1 cores: lower lanes or list more cores");
  const int too_many = physical_cores(allowed) + 1;
  EXPECT_NE(error_of(identity_options(), too_many).find("needs a core per lane"),
            std::string::npos);
}
