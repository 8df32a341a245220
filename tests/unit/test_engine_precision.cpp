// precision=auto through the engine: the decision is made once, cached, and
// every later load of the same model on the same setup reuses it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/error.h"
#include "common/memory_error.h"
#include "common/sysinfo.h"
#include "engine/engine.h"
#include "engine/precision_choice.h"
#include "model/model_loader.h"
#include "test_paths.h"

#include <torch/version.h>

using namespace torchinfer;

namespace {

class EnginePrecisionCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/torchinfer-engine-precision-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
    const char* old = getenv("TORCHINFER_CACHE_DIR");
    had_old = old != nullptr;
    if (old) saved = old;
    use_dir(root + "/cache");
  }
  void TearDown() override {
    if (had_old)
      setenv("TORCHINFER_CACHE_DIR", saved.c_str(), 1);
    else
      unsetenv("TORCHINFER_CACHE_DIR");
    std::system(("rm -rf '" + root + "'").c_str());
  }
  void use_dir(const std::string& d) {
    dir = d;
    setenv("TORCHINFER_CACHE_DIR", d.c_str(), 1);
  }
  // Auto with the bf16 timing forced on, so the cached path runs on any CPU.
  static EngineOptions auto_opts(int threads = 1, int batch = 2) {
    EngineOptions o;
    o.model_path = test::model_path("tiny_classifier.pt");
    o.input_width = 48;
    o.input_height = 32;
    o.warmup_runs = 1;
    o.warmup_batch_sizes = {batch};
    o.threads = threads;
    o.precision = Precision::kAuto;
    o.probe_bf16 = true;
    return o;
  }
  std::string root, dir, saved;
  bool had_old = false;
};

TEST_F(EnginePrecisionCache, FiveLoadsGiveOneChoiceAndFourComeFromTheCache) {
  Precision first = Precision::kAuto;
  std::string file;
  for (int i = 0; i < 5; ++i) {
    Engine e(auto_opts());
    const EngineInfo& info = e.info();
    if (i == 0) {
      first = info.precision;
      file = info.precision_cache_file;
      EXPECT_FALSE(info.precision_from_cache);
      EXPECT_EQ(info.precision_note.rfind("auto: ", 0), 0u) << info.precision_note;
      EXPECT_NE(info.precision_note.find(" timed at batch 2: "), std::string::npos)
          << info.precision_note;
      EXPECT_GT(info.fp32_ms, 0);
      EXPECT_GT(info.bf16_ms, 0);
      EXPECT_EQ(file.rfind(dir + "/precision-", 0), 0u) << file;
      EXPECT_EQ(access(file.c_str(), R_OK), 0) << file;
    } else {
      EXPECT_TRUE(info.precision_from_cache) << "load " << i + 1 << ": " << info.precision_note;
      EXPECT_EQ(info.precision_cache_file, file);
      EXPECT_EQ(info.precision_note,
                std::string("auto: ") + to_string(first) + " (cached " +
                    info.precision_note.substr(info.precision_note.find("(cached ") + 8, 20) +
                    ", " + file + ")");
    }
    EXPECT_EQ(info.precision, first) << "load " << i + 1;
  }
  // tiny_classifier takes far under 2 ms a batch: the rule keeps fp32 on any CPU.
  EXPECT_EQ(first, Precision::kFp32);
}

// The loader warms batch 1 but asks for the decision at the full batch:
// it is timed and cached there, after a "precision" progress stage.
TEST_F(EnginePrecisionCache, DecidedAtThePrecisionBatchAfterTheWarmUp) {
  EngineOptions o = auto_opts(1, 1);
  o.precision_batch = 3;
  std::vector<std::string> stages;
  std::vector<int> done;
  o.on_progress = [&](const LoadProgress& p) {
    stages.push_back(to_string(p.stage));
    done.push_back(p.done);
    EXPECT_EQ(p.total, 1);
  };
  std::string file;
  {
    Engine e(o);
    EXPECT_NE(e.info().precision_note.find(" timed at batch 3: "), std::string::npos)
        << e.info().precision_note;
    file = e.info().precision_cache_file;
  }
  EXPECT_EQ(stages,
            (std::vector<std::string>{"read", "optimize", "warmup", "warmup", "precision"}));
  EXPECT_EQ(done, (std::vector<int>{0, 0, 0, 1, 1}));
  {
    Engine e(auto_opts(1, 3));  // warmed at 3: the same key, batch 3
    EXPECT_TRUE(e.info().precision_from_cache) << e.info().precision_note;
    EXPECT_EQ(e.info().precision_cache_file, file);
  }
}

TEST_F(EnginePrecisionCache, ThreadsAndBatchAreSeparateEntries) {
  std::string a, b, c;
  {
    Engine e(auto_opts(1, 2));
    a = e.info().precision_cache_file;
  }
  {
    Engine e(auto_opts(2, 2));
    EXPECT_FALSE(e.info().precision_from_cache);
    b = e.info().precision_cache_file;
  }
  {
    Engine e(auto_opts(1, 3));
    EXPECT_FALSE(e.info().precision_from_cache);
    c = e.info().precision_cache_file;
  }
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
  Engine again(auto_opts(1, 2));
  EXPECT_TRUE(again.info().precision_from_cache);
  EXPECT_EQ(again.info().precision_cache_file, a);
}

TEST_F(EnginePrecisionCache, CorruptCacheFileIsNotedAndRewritten) {
  std::string file;
  {
    Engine e(auto_opts());
    file = e.info().precision_cache_file;
  }
  std::ofstream(file, std::ios::trunc) << "{\"truncated";
  {
    Engine e(auto_opts());
    EXPECT_FALSE(e.info().precision_from_cache);
    EXPECT_EQ(e.info().precision, Precision::kFp32);
    EXPECT_NE(
        e.info().precision_note.find("precision cache ignored, deciding again: precision cache '" +
                                     file + "': not valid JSON"),
        std::string::npos)
        << e.info().precision_note;
  }
  Engine e(auto_opts());
  EXPECT_TRUE(e.info().precision_from_cache) << e.info().precision_note;
}

TEST_F(EnginePrecisionCache, UnwritableFolderDecidesEachRunAndSaysSo) {
  const std::string file = root + "/plain";
  std::ofstream(file) << "x";
  use_dir(file + "/cache");
  for (int i = 0; i < 2; ++i) {
    Engine e(auto_opts());
    EXPECT_EQ(e.info().precision, Precision::kFp32);
    EXPECT_FALSE(e.info().precision_from_cache);
    EXPECT_EQ(e.info().precision_cache_file, "");
    EXPECT_NE(e.info().precision_note.find("precision cache not written"), std::string::npos)
        << e.info().precision_note;
  }
}

TEST_F(EnginePrecisionCache, ExplicitPrecisionsNeitherReadNorWriteTheCache) {
  EngineOptions o = auto_opts();
  o.precision = Precision::kFp32;
  {
    Engine e(o);
    EXPECT_EQ(e.info().precision_cache_file, "");
  }
  o.precision = Precision::kBf16;
  {
    Engine e(o);
    EXPECT_EQ(e.info().precision_cache_file, "");
    EXPECT_FALSE(e.info().precision_from_cache);
  }
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
}

TEST_F(EnginePrecisionCache, AutoTimesBf16OnlyWhereTheCpuHasIt) {
  EngineOptions o = auto_opts();
  o.probe_bf16 = false;
  for (int i = 0; i < 2; ++i) {
    Engine e(o);
    EXPECT_EQ(e.info().precision, Precision::kFp32);
    if (isa_from_flags(read_cpuinfo().flags).avx512_bf16) {
      EXPECT_EQ(e.info().precision_from_cache, i == 1) << e.info().precision_note;
      EXPECT_EQ(e.info().precision_cache_file.rfind(dir + "/precision-", 0), 0u);
    } else {
      // Emulated bf16 is never the faster one: fp32 without timing or cache.
      EXPECT_EQ(e.info().precision_note, "auto: fp32 (this CPU has no AVX512-BF16)");
      EXPECT_EQ(e.info().bf16_ms, 0);
      EXPECT_FALSE(e.info().precision_from_cache);
      EXPECT_EQ(e.info().precision_cache_file, "");
    }
  }
}

// A lane after the first (lanes > 1) takes the first lane's decision: bf16
// converts without timing fp32 against it again.
TEST_F(EnginePrecisionCache, ADecidedBf16ConvertsWithoutTiming) {
  EngineOptions o = auto_opts();
  o.precision = Precision::kBf16;
  o.precision_decided = true;
  std::vector<std::string> stages;
  o.on_progress = [&](const LoadProgress& p) { stages.push_back(to_string(p.stage)); };
  Engine e(o);
  EXPECT_EQ(e.info().precision, Precision::kBf16);
  EXPECT_EQ(e.info().precision_note, "bf16, as the model's first lane decided");
  EXPECT_EQ(e.info().fp32_ms, 0);
  EXPECT_EQ(e.info().bf16_ms, 0);
  EXPECT_EQ(std::count(stages.begin(), stages.end(), "precision"), 0);
  std::vector<float> in(2 * 32 * 48 * 3, 0.5f);
  EXPECT_EQ(e.run(in.data(), 2)->tensors().size(), 1u);
  EXPECT_TRUE(may_choose_bf16(o));
  o.precision = Precision::kFp32;
  EXPECT_FALSE(may_choose_bf16(o));
}

// Where lane 0 may pick bf16 by timing, lane 1 loads after it with its
// choice, reporting its own stages after lane 0's; it never times.
TEST_F(EnginePrecisionCache, LanesRunTheFirstLanesChoice) {
  EngineOptions o = auto_opts();
  o.threads = 0;
  o.warmup_runs = 1;
  std::vector<std::string> stages;
  o.on_progress = [&](const LoadProgress& p) { stages.push_back(to_string(p.stage)); };
  ModelConfig c;
  c.input_width = 48;
  c.input_height = 32;
  if (physical_cores(allowed_cpus()) < 2) {
    EXPECT_THROW(load_model(o, c, 2, 1, 2), Error);
    return;
  }
  const auto m = load_model(o, c, 2, 1, 2);
  ASSERT_EQ(m->lane_count(), 2);
  const EngineInfo &first = m->lane(0).engine->info(), &second = m->lane(1).engine->info();
  EXPECT_GT(first.fp32_ms, 0) << "lane 0 timed: " << first.precision_note;
  EXPECT_EQ(second.precision, first.precision);
  EXPECT_EQ(second.fp32_ms, 0) << "lane 1 did not time: " << second.precision_note;
  EXPECT_EQ(second.bf16_ms, 0);
  EXPECT_EQ(std::count(stages.begin(), stages.end(), "precision"), 1);
  EXPECT_EQ(std::count(stages.begin(), stages.end(), "read"), 2) << "lane 1 reports too";
  EXPECT_EQ(stages.back(), "timing");
}

// NNStreamer's LeNet-5 shape (issue 24): forward() converts its input back
// to float32, so its bf16 copy meets bf16 weights with a float32 input. The
// unfrozen copy raises; a frozen one took the process down in libtorch. The
// copy is tried unfrozen before anything freezes or times it.
EngineOptions casts_input(Precision p) {
  EngineOptions o;
  o.model_path = test::model_path("lenet_casts_input.pt");
  o.input_width = 28;
  o.input_height = 28;
  o.channels = 1;
  o.input_nhwc = true;
  o.warmup_runs = 1;
  o.threads = 1;
  o.precision = p;
  o.probe_bf16 = true;  // as an AVX512-BF16 CPU would, on any CPU
  return o;
}

void expect_bf16_refused(const EngineOptions& o, const std::string& what) {
  try {
    Engine e(o);
    ADD_FAILURE() << what << ": loaded as " << to_string(e.info().precision);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid) << e.what();
    const std::string m = e.what();
    for (const char* part :
         {"precision=bf16: model '", "lenet_casts_input.pt': the model does not run in bfloat16 (",
          "should be the same", "its forward() converts its input back to float32",
          "; use precision=fp32 or auto"})
      EXPECT_NE(m.find(part), std::string::npos) << what << ": no '" << part << "' in " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST_F(EnginePrecisionCache, Bf16OnAModelThatCastsItsInputIsRefusedWithTheReason) {
  expect_bf16_refused(casts_input(Precision::kBf16), "precision=bf16");
  EngineOptions lane = casts_input(Precision::kBf16);
  lane.precision_decided = true;  // a later lane converts without timing: still tried first
  expect_bf16_refused(lane, "decided bf16");
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << "nothing cached";
}

TEST_F(EnginePrecisionCache, AutoOnAModelThatCastsItsInputRunsFp32AndSaysWhy) {
  for (int i = 0; i < 2; ++i) {
    Engine e(casts_input(Precision::kAuto));
    const EngineInfo& info = e.info();
    EXPECT_EQ(info.precision, Precision::kFp32);
    EXPECT_EQ(info.precision_note.rfind("auto: fp32 (bf16 refused: the model does not run in "
                                        "bfloat16 (",
                                        0),
              0u)
        << info.precision_note;
    EXPECT_NE(info.precision_note.find("converts its input back to float32"), std::string::npos)
        << info.precision_note;
    EXPECT_EQ(info.bf16_ms, 0) << "refused before any timing";
    EXPECT_FALSE(info.precision_from_cache) << "a refusal is not cached";
    EXPECT_EQ(info.precision_cache_file, "");
    // fp32 runs: all zeros is nearest to the template of "1" (two strokes).
    std::vector<float> in(28 * 28, 0.f);
    const auto out = e.run(in.data(), 1);
    ASSERT_EQ(out->tensors()[0].dtype, DType::kUInt8);
    const auto* p = static_cast<const std::uint8_t*>(out->tensors()[0].data);
    EXPECT_EQ(std::max_element(p, p + 10) - p, 1);
  }
}

// A cache file saying bf16 (written on another start, or by hand) is
// tried like any bf16 copy: refused, decided again, fp32.
TEST_F(EnginePrecisionCache, ACachedBf16ThatCannotRunIsDecidedAgain) {
  const EngineOptions o = casts_input(Precision::kAuto);
  PrecisionKey key;
  hash_model_file(o.model_path, &key);
  key.cpu_model = read_cpuinfo().model_name;
  key.threads = 1;
  key.batch = 1;
  key.torch_version = TORCH_VERSION;
  PrecisionDecision d;
  d.bf16 = true;
  d.fp32_ms = 2;
  d.bf16_ms = 1;
  d.reason = "bf16: written by the test";
  std::string note;
  ASSERT_NE(write_cached_decision(dir, key, d, &note), "") << note;
  Engine e(o);
  EXPECT_EQ(e.info().precision, Precision::kFp32);
  EXPECT_FALSE(e.info().precision_from_cache);
  EXPECT_NE(e.info().precision_note.find("cached bf16 no longer runs (the model does not run in "
                                         "bfloat16 ("),
            std::string::npos)
      << e.info().precision_note;
}

// The fp32/bf16 timing runs at the full batch: a batch no memory holds is
// named by its settings and bytes, not left to a bare std::bad_alloc
// (which the element reported as "Out of memory while loading model (corrupt file?)").
TEST_F(EnginePrecisionCache, OutOfMemoryAtTheBf16TimingNamesTheSettings) {
  EngineOptions o = auto_opts();
  o.model_path = test::model_path("identity.pt");
  o.input_width = 1024;
  o.input_height = 1024;
  o.warmup_batch_sizes = {1};
  o.precision_batch = 2000000000;  // 25 PB of input: no machine has it
  try {
    Engine e(o);
    ADD_FAILURE() << "loaded: " << e.info().precision_note;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid) << e.what();
    EXPECT_EQ(std::string(e.what()),
              "model '" + o.model_path +
                  "': out of memory at the fp32/bf16 timing: input_width 1024 x input_height "
                  "1024 x batch-size 2000000000 (3 channels) needs 25165824000000000 bytes for "
                  "the input batch alone; lower batch-size or input_width/input_height");
  }
}

}  // namespace
