#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <iterator>
#include <numeric>
#include <set>
#include <thread>

#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "common/error.h"
#include "engine/engine.h"
#include "test_paths.h"

#include <nlohmann/json.hpp>

using namespace torchinfer;
using namespace std::chrono_literals;

namespace {

EngineOptions opts(const std::string& model, int w, int h, int c = 3) {
  EngineOptions o;
  o.model_path = test::model_path(model);
  o.input_width = w;
  o.input_height = h;
  o.channels = c;
  o.warmup_runs = 2;
  // Exact comparisons below need fp32; auto may pick bf16 where it is faster.
  o.precision = Precision::kFp32;
  return o;
}

// A zeroed batch buffer of n floats.
AlignedBuffer floats(std::size_t n) {
  return AlignedBuffer(n * sizeof(float));
}

void fill_ramp(AlignedBuffer& b) {
  float* v = b.data<float>();
  for (std::size_t i = 0; i < b.bytes() / sizeof(float); ++i)
    v[i] = static_cast<float>((i * 37) % 101) / 50.f - 1.f;
}

// Runs the engine expecting failure; returns the message.
std::string load_error(const EngineOptions& o, ErrorKind expected) {
  try {
    Engine e(o);
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), expected) << err.what();
    return err.what();
  }
  ADD_FAILURE() << o.model_path << " loaded";
  return {};
}

}  // namespace

TEST(Engine, OptimisedMatchesUnoptimised) {
  Engine fast(opts("tiny_classifier.pt", 48, 32));
  EngineOptions plain_opts = opts("tiny_classifier.pt", 48, 32);
  plain_opts.optimize = false;
  Engine plain(plain_opts);
  EXPECT_TRUE(fast.info().frozen);
  EXPECT_TRUE(fast.info().optimized) << fast.info().optimize_note;
  EXPECT_FALSE(plain.info().optimized);
  EXPECT_EQ(fast.info().input_name, "x");

  AlignedBuffer in = floats(2 * 32 * 48 * 3);
  fill_ramp(in);
  const auto a = fast.run(in.data(), 2);
  const auto b = plain.run(in.data(), 2);
  ASSERT_EQ(a->tensors().size(), 1u);
  EXPECT_EQ(a->tensors()[0].name, "output");
  EXPECT_EQ(a->tensors()[0].dims, (std::vector<std::int64_t>{2, 5}));
  const float* pa = a->tensors()[0].f32();
  const float* pb = b->tensors()[0].f32();
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(pa[i], pb[i], 1e-4) << i;
  // The two frames differ, and frame(1) views the second row.
  EXPECT_NE(pa[0], pa[5]);
  const auto f1 = a->frame(1);
  EXPECT_EQ(f1[0].dims, (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(f1[0].f32(), pa + 5);
  EXPECT_EQ(f1[0].bytes, 5 * sizeof(float));
  EXPECT_THROW(a->frame(2), Error);
}

TEST(Engine, InputIsReadAsNhwc) {
  Engine e(opts("identity.pt", 8, 6));
  AlignedBuffer in = floats(6 * 8 * 3);
  fill_ramp(in);
  const auto out = e.run(in.data(), 1);
  const TensorView& t = out->tensors()[0];
  ASSERT_EQ(t.dims, (std::vector<std::int64_t>{1, 3, 6, 8}));
  // Output is contiguous NCHW: out[c][y][x] == in[y][x][c].
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x)
        ASSERT_FLOAT_EQ(t.f32()[(c * 6 + y) * 8 + x], in.data<float>()[(y * 8 + x) * 3 + c]);
  // Refilling the input must not change results already handed out.
  const float before = t.f32()[0];
  in.data<float>()[0] += 5.f;
  EXPECT_FLOAT_EQ(t.f32()[0], before);
}

TEST(Engine, TupleAndDictOutputsAreNamed) {
  Engine tuple(opts("tuple_output.pt", 16, 16));
  Engine dict(opts("dict_output.pt", 16, 16));
  AlignedBuffer in = floats(16 * 16 * 3);
  fill_ramp(in);
  const auto t = tuple.run(in.data(), 1);
  ASSERT_EQ(t->tensors().size(), 2u);
  EXPECT_EQ(t->tensors()[0].name, "output0");
  EXPECT_EQ(t->tensors()[1].name, "output1");
  const auto d = dict.run(in.data(), 1);
  ASSERT_EQ(d->tensors().size(), 2u);
  EXPECT_EQ(d->tensors()[0].name, "mean");
  EXPECT_EQ(d->tensors()[1].name, "sum");
  // mean * 256 == sum for a 16x16 input
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(d->tensors()[0].f32()[c] * 256, d->tensors()[1].f32()[c], 1e-3);
  EXPECT_NEAR(d->tensors()[0].f32()[0], t->tensors()[0].f32()[0], 1e-6);
}

TEST(Engine, ReportsTimings) {
  Engine e(opts("tiny_classifier.pt", 48, 32));
  EXPECT_GT(e.info().load_ms, 0);
  EXPECT_GT(e.info().warmup_ms, 0);
  AlignedBuffer in = floats(32 * 48 * 3);
  EXPECT_GT(e.run(in.data(), 1)->inference_ms(), 0);
}

// ---- negative cases -------------------------------------------------------

TEST(EngineErrors, MissingFile) {
  const auto msg = load_error(opts("does_not_exist.pt", 8, 8), ErrorKind::kNotFound);
  EXPECT_NE(msg.find("does_not_exist.pt"), std::string::npos);
}

TEST(EngineErrors, CorruptFiles) {
  std::ifstream in(test::model_path("tiny_classifier.pt"), std::ios::binary);
  std::vector<char> good{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_GT(good.size(), 100u) << "test model missing: run through meson test";
  auto write = [](const std::string& name, const std::vector<char>& bytes) {
    const std::string p = testing::TempDir() + name;
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  };
  std::vector<char> flipped = good;
  flipped[good.size() / 2] ^= 0x01;
  std::vector<char> garbage(3000);
  std::iota(garbage.begin(), garbage.end(), 0);
  for (const auto& path : {write("e_empty.pt", {}), write("e_garbage.pt", garbage),
                           write("e_trunc.pt", std::vector<char>(good.begin(), good.end() - 100)),
                           write("e_flip.pt", flipped)}) {
    EngineOptions o = opts("", 48, 32);
    o.model_path = path;
    const auto msg = load_error(o, ErrorKind::kModelInvalid);
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
}

TEST(EngineErrors, TwoInputs) {
  const auto msg = load_error(opts("two_inputs.pt", 8, 8), ErrorKind::kModelInvalid);
  EXPECT_NE(msg.find("takes 2 inputs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wrap the model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("models/README.md"), std::string::npos) << msg;
}

TEST(EngineErrors, UnsupportedReturnTypes) {
  for (const char* m : {"returns_string.pt", "returns_int_list.pt"}) {
    const auto msg = load_error(opts(m, 8, 8), ErrorKind::kModelInvalid);
    EXPECT_NE(msg.find("must return a Tensor"), std::string::npos) << msg;
  }
}

TEST(EngineErrors, WrongInputShape) {
  const auto msg = load_error(opts("wrong_channels.pt", 16, 16), ErrorKind::kModelInvalid);
  EXPECT_NE(msg.find("1x3x16x16"), std::string::npos) << msg;
}

TEST(EngineErrors, BadGeometryAndBatch) {
  EXPECT_THROW(Engine(opts("identity.pt", 0, 6)), Error);
  EXPECT_THROW(Engine(opts("identity.pt", 8, 6, 2)), Error);
  Engine e(opts("identity.pt", 8, 6));
  EXPECT_THROW(e.run(nullptr, 1), Error);
  AlignedBuffer in = floats(6 * 8 * 3);
  EXPECT_THROW(e.run(in.data(), 0), Error);
}

// ---- threads, cores, precision ---------------------------------------------

namespace {

std::string cpus_allowed_of(int tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      std::string v = line.substr(line.find(':') + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "?";
}

}  // namespace

TEST(EngineThreads, WorkersArePinnedToListedCores) {
  const auto allowed = allowed_cpus();
  std::vector<std::string> lists{std::to_string(allowed[0])};
  if (allowed.size() >= 2)
    for (const std::string& l : {std::string("1"), std::string("0-1")})
      if (allowed[0] == 0 && allowed[1] == 1) lists.push_back(l);
  for (const std::string& list : lists) {
    EngineOptions o = opts("tiny_classifier.pt", 48, 32);
    o.cores = list;
    o.warmup_batch_sizes = {1, 2};
    Engine e(o);
    const auto cores = parse_cpu_list(list);
    EXPECT_EQ(e.info().cores, cores);
    EXPECT_EQ(e.info().threads, static_cast<int>(cores.size()));
    AlignedBuffer in = floats(2 * 32 * 48 * 3);
    e.first_touch(in.data(), in.bytes());
    fill_ramp(in);
    e.run(in.data(), 2);
    ASSERT_EQ(e.info().thread_ids.size(), cores.size());
    std::set<std::string> seen;
    for (int tid : e.info().thread_ids) {
      const std::string got = cpus_allowed_of(tid);
      // One core per thread, and each one from the list.
      EXPECT_EQ(parse_cpu_list(got).size(), 1u) << list << ": tid " << tid << " on " << got;
      EXPECT_TRUE(std::count(cores.begin(), cores.end(), parse_cpu_list(got)[0])) << got;
      seen.insert(got);
    }
    EXPECT_EQ(seen.size(), cores.size()) << list << ": threads share a core";
  }
}

TEST(EngineThreads, ThreadCountDefaultsAndOverride) {
  EngineOptions o = opts("identity.pt", 8, 6);
  Engine def(o);
  EXPECT_EQ(def.info().threads, default_threads({}));
  EXPECT_TRUE(def.info().cores.empty());
  o.threads = 1;
  Engine one(o);
  EXPECT_EQ(one.info().threads, 1);
  EXPECT_EQ(one.info().thread_ids.size(), 1u);
  // Callers on other threads are not pinned by the engine.
  EXPECT_EQ(parse_cpu_list(cpus_allowed_of(current_tid())), allowed_cpus());
}

// A batcher's loop is posted onto the engine's thread: run() from there needs
// no hand-off, and that thread is thread 0 of the team pinned at load.
TEST(EngineThreads, WorkPostedToTheEngineRunsOnItsPinnedThread) {
  const auto allowed = allowed_cpus();
  const std::string core = std::to_string(allowed.back());
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.cores = core;
  o.warmup_batch_sizes = {2};
  Engine e(o);
  AlignedBuffer in = floats(2 * 32 * 48 * 3);
  fill_ramp(in);
  auto values = [](const std::shared_ptr<const BatchOutput>& out) {
    const TensorView& v = out->tensors()[0];
    const float* p = static_cast<const float*>(v.data);
    return std::vector<float>(p, p + v.bytes / sizeof(float));
  };
  const std::vector<float> handed_over = values(e.run(in.data(), 2));
  std::vector<float> posted;
  int tid = 0, calls = 0;
  std::string affinity;
  e.post([&] {
     tid = current_tid();
     affinity = cpus_allowed_of(tid);
     for (int i = 0; i < 2; ++i) posted = values(e.run(in.data(), 2));
     e.parallel_for(3, [&](int, int worker) { calls += worker == 0; });
   }).get();
  ASSERT_EQ(e.info().thread_ids.size(), 1u);
  EXPECT_EQ(tid, e.info().thread_ids[0]) << "the engine's own thread, not another team";
  EXPECT_EQ(affinity, core);
  EXPECT_EQ(posted, handed_over);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(parse_cpu_list(cpus_allowed_of(current_tid())), allowed) << "the caller is not pinned";
}

// first_touch never waits for the engine's thread, which a batcher's loop
// holds for as long as the batcher lives.
TEST(EngineThreads, FirstTouchWorksWhileALoopHoldsTheEngineThread) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.cores = std::to_string(allowed_cpus().back());
  Engine e(o);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::future<void> loop = e.post([released] { released.wait(); });
  constexpr std::size_t kFloats = 3 * 1024 + 7;  // three pages and a bit
  AlignedBuffer b = floats(kFloats);
  std::fill(b.data<float>(), b.data<float>() + kFloats, 1.f);
  e.first_touch(b.data(), kFloats * sizeof(float));
  EXPECT_EQ(std::count(b.data<float>(), b.data<float>() + kFloats, 0.f),
            static_cast<long>(kFloats));
  EXPECT_EQ(loop.wait_for(0s), std::future_status::timeout) << "the loop still holds the thread";
  release.set_value();
  loop.get();
}

// The last owner may let go on the engine's own thread (a batcher loop
// holding the last reference to a replaced model): the model is freed there
// and the thread and its OpenMP team end once the loop returns.
TEST(EngineThreads, DestroyedOnItsOwnThreadEndsWithItsTeam) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.threads = 2;  // a team of 2 on any machine
  auto e = std::make_shared<Engine>(o);
  ASSERT_EQ(e->info().thread_ids.size(), 2u);
  const int own = e->info().thread_ids[0], helper = e->info().thread_ids[1];
  EXPECT_NE(cpus_allowed_of(helper), "?") << "the engine team's helper runs";
  Engine* raw = e.get();
  std::future<void> done = raw->post([keep = std::move(e)]() mutable { keep.reset(); });
  ASSERT_EQ(done.wait_for(60s), std::future_status::ready) << "the destructor waited for itself";
  done.get();
  for (int i = 0; i < 200 && (cpus_allowed_of(own) != "?" || cpus_allowed_of(helper) != "?"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(cpus_allowed_of(own), "?") << "the engine's thread outlived it";
  EXPECT_EQ(cpus_allowed_of(helper), "?") << "its team outlived it";
}

TEST(EngineThreads, Bf16OrFallbackIsExplained) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.precision = Precision::kBf16;
  Engine e(o);
  // Either bf16 won the timing or fp32 runs with the figures saying why.
  EXPECT_TRUE(e.info().precision == Precision::kBf16 || e.info().precision == Precision::kFp32);
  EXPECT_GT(e.info().fp32_ms, 0);
  EXPECT_NE(e.info().precision_note.find("fp32"), std::string::npos) << e.info().precision_note;
  AlignedBuffer in = floats(32 * 48 * 3);
  fill_ramp(in);
  Engine ref(opts("tiny_classifier.pt", 48, 32));
  const auto a = e.run(in.data(), 1);
  const auto b = ref.run(in.data(), 1);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(a->tensors()[0].f32()[i], b->tensors()[0].f32()[i], 0.05);
}

TEST(EngineThreads, AutoNeverReportsAuto) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.precision = Precision::kAuto;
  Engine e(o);
  EXPECT_NE(e.info().precision, Precision::kAuto);
  EXPECT_FALSE(e.info().model_quantized);
  EXPECT_EQ(e.info().qengine, "onednn");
  EXPECT_FALSE(e.info().input_quantized_by_engine);
}

// ---- negative: cores, threads, precision -----------------------------------

TEST(EngineThreadErrors, BadCoreListsFailBeforeLoading) {
  for (const char* bad : {"a-b", "3-1", "", "99", "4095", "0,,1"}) {
    EngineOptions o = opts("tiny_classifier.pt", 48, 32);
    o.cores = std::string(bad);
    const auto msg = load_error(o, ErrorKind::kConfigInvalid);
    EXPECT_NE(msg.find("cores '" + std::string(bad) + "'"), std::string::npos) << msg;
  }
}

TEST(EngineThreadErrors, CoreOutsideAllowedSetNamesAllowedOnes) {
  const auto allowed = allowed_cpus();
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.cores = std::to_string(allowed.back() + 1);
  const auto msg = load_error(o, ErrorKind::kConfigInvalid);
  EXPECT_NE(msg.find("allowed: " + format_cpu_list(allowed)), std::string::npos) << msg;
}

TEST(EngineThreadErrors, ThreadsOutOfRange) {
  EngineOptions o = opts("identity.pt", 8, 6);
  o.threads = -1;
  EXPECT_NE(load_error(o, ErrorKind::kConfigInvalid).find("threads=-1"), std::string::npos);
  o.threads = 5000;
  load_error(o, ErrorKind::kConfigInvalid);
}

TEST(EngineThreadErrors, Int8RequestedForFloatModel) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.precision = Precision::kInt8;
  EXPECT_NE(load_error(o, ErrorKind::kConfigInvalid).find("quantize.py"), std::string::npos);
}

TEST(EngineThreadErrors, SidecarSaysInt8ButModelIsFloat) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.declared_int8 = true;
  EXPECT_NE(load_error(o, ErrorKind::kModelInvalid).find("no quantized operators"),
            std::string::npos);
}

TEST(EngineThreadErrors, EmptyWarmupList) {
  EngineOptions o = opts("identity.pt", 8, 6);
  o.warmup_batch_sizes.clear();
  load_error(o, ErrorKind::kInvalidArgument);
}

// ---- int8 ------------------------------------------------------------------

namespace {
std::vector<float> expected_int8(const char* key, const char* file = "tiny_int8.expected.json") {
  std::ifstream in(test::model_path(file));
  const auto j = nlohmann::json::parse(in);
  return j.at(key).get<std::vector<float>>();
}

// A quantized 48x32 test model as its sidecar declares it, warmed at 1 and 2.
EngineOptions int8_opts(const char* file) {
  EngineOptions o = opts(file, 48, 32);
  o.precision = Precision::kAuto;
  o.declared_int8 = true;
  o.warmup_batch_sizes = {1, 2};
  return o;
}
}  // namespace

TEST(EngineInt8, LoadsOnOnednnAndMatchesPython) {
  Engine e(int8_opts("tiny_int8.pt"));
  EXPECT_TRUE(e.info().model_quantized);
  EXPECT_EQ(e.info().precision, Precision::kInt8);
  EXPECT_EQ(e.info().qengine, "onednn");
  EXPECT_TRUE(e.info().input_quantized_by_engine);
  AlignedBuffer in = floats(2 * 32 * 48 * 3);
  fill_ramp(in);
  const auto out = e.run(in.data(), 2);
  const TensorView& t = out->tensors()[0];
  ASSERT_EQ(t.dims, (std::vector<std::int64_t>{2, 5}));
  ASSERT_NE(t.f32(), nullptr);  // dequantized for consumers
  const auto want = expected_int8("output");
  const auto fp32 = expected_int8("fp32_output");
  ASSERT_EQ(want.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    // Same oneDNN kernels as Python: equal up to float rounding.
    EXPECT_NEAR(t.f32()[i], want[i], 1e-4) << i;
    // And int8 stays close to the float model it came from.
    EXPECT_NEAR(t.f32()[i], fp32[i], 0.05) << i;
  }
}

// quantize.py's graph passes (ReLU6 folded, the classifier Linear run as a
// 1x1 convolution) leave a model the engine loads and runs as Python does.
TEST(EngineInt8, ConvClassifierModelMatchesPython) {
  Engine e(int8_opts("relu6_int8.pt"));
  EXPECT_EQ(e.info().precision, Precision::kInt8);
  EXPECT_TRUE(e.info().input_quantized_by_engine);
  AlignedBuffer in = floats(2 * 32 * 48 * 3);
  fill_ramp(in);
  const auto want = expected_int8("output", "relu6_int8.expected.json");
  const auto fp32 = expected_int8("fp32_output", "relu6_int8.expected.json");
  ASSERT_EQ(want.size(), 10u);
  ASSERT_EQ(fp32.size(), 10u);
  const auto out = e.run(in.data(), 2);
  const TensorView& t = out->tensors()[0];
  ASSERT_EQ(t.dims, (std::vector<std::int64_t>{2, 5}));
  ASSERT_NE(t.f32(), nullptr);
  double abs_err = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_NEAR(t.f32()[i], want[i], 1e-4) << i;
    abs_err += std::abs(t.f32()[i] - fp32[i]);
  }
  // quantize.py's guard for this model in the tools test: --max-mae 0.02.
  EXPECT_LE(abs_err / 10, 0.02);
  // Traced at batch 1: the 1x1 convolution and flatten follow the batch.
  const auto one = e.run(in.data(), 1);
  ASSERT_EQ(one->tensors()[0].dims, (std::vector<std::int64_t>{1, 5}));
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(one->tensors()[0].f32()[i], want[i], 1e-4) << i;
}

TEST(EngineInt8, ExplicitInt8AndPinned) {
  EngineOptions o = opts("tiny_int8.pt", 48, 32);
  o.precision = Precision::kInt8;
  o.cores = std::to_string(allowed_cpus()[0]);
  Engine e(o);
  EXPECT_EQ(e.info().precision, Precision::kInt8);
  AlignedBuffer in = floats(32 * 48 * 3);
  fill_ramp(in);
  EXPECT_NEAR(e.run(in.data(), 1)->tensors()[0].f32()[0], expected_int8("output")[0], 1e-4);
}

TEST(EngineInt8Errors, FloatPrecisionsOnAnInt8Model) {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    EngineOptions o = opts("tiny_int8.pt", 48, 32);
    o.precision = p;
    const auto msg = load_error(o, ErrorKind::kConfigInvalid);
    EXPECT_NE(msg.find("int8-quantized"), std::string::npos) << msg;
  }
}

TEST(EngineThreads, FirstTouchZeroesFromTheEngineThreads) {
  EngineOptions o = opts("identity.pt", 8, 6);
  o.threads = 2;
  Engine e(o);
  const std::size_t n = 3 * 1024 * 1024 + 3;  // several pages per thread, and a partial one
  AlignedBuffer b(n * sizeof(float), AlignedBuffer::Init::kNone);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kBufferAlignment, 0u);
  float* v = b.data<float>();
  std::fill(v, v + 1000, 7.f);  // whatever was there must go
  v[n - 1] = 7.f;
  e.first_touch(b.data(), b.bytes());
  for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(v[i], 0.f) << i;
  EXPECT_EQ(v[n - 1], 0.f);
  e.first_touch(nullptr, 5);  // no-op, no crash
}

// ---- hostile outputs ------------------------------------------------------

TEST(EngineOutputs, NonFiniteFramesAreFlaggedPerFrame) {
  EngineOptions o = opts("nan_classifier.pt", 8, 8, 1);
  o.warmup_batch_sizes = {3};
  Engine e(o);
  // Frame means: 1.0 (finite scores), 0.0 (log of a negative: NaN), 0.5
  // (log 0: -inf).
  AlignedBuffer in((3 * 64) * sizeof(float));
  for (int i = 0; i < 64; ++i) {
    in.data<float>()[i] = 1.f;
    in.data<float>()[64 + i] = 0.f;
    in.data<float>()[128 + i] = 0.5f;
  }
  const auto out = e.run(in.data<float>(), 3);
  EXPECT_TRUE(out->frame_finite(0));
  EXPECT_FALSE(out->frame_finite(1));
  EXPECT_FALSE(out->frame_finite(2));
  EXPECT_THROW(out->frame_finite(3), Error);
  const float* s = out->frame(0)[0].f32();
  EXPECT_FLOAT_EQ(s[3], -4.f * std::log(0.5f));
  EXPECT_TRUE(std::isinf(out->frame(2)[0].f32()[0]));
}

TEST(EngineOutputs, IntegerOutputsAreAlwaysFinite) {
  EngineOptions o = opts("lenet_nhwc_uint8.pt", 28, 28, 1);
  o.input_nhwc = true;
  Engine e(o);
  AlignedBuffer in((28 * 28) * sizeof(float));
  std::fill(in.data<float>(), in.data<float>() + 28 * 28, 0.f);
  const auto out = e.run(in.data<float>(), 1);
  EXPECT_EQ(out->tensors()[0].dtype, DType::kUInt8);
  EXPECT_EQ(out->tensors()[0].dims, (std::vector<std::int64_t>{1, 10}));
  EXPECT_TRUE(out->frame_finite(0));
}

// The model returns its own buffer and overwrites it on the next call:
// results handed out earlier must keep their own values.
TEST(EngineOutputs, OutputSharingModuleStateIsCopied) {
  for (bool optimize : {true, false}) {
    EngineOptions o = opts("stateful_output.pt", 4, 4, 1);
    o.optimize = optimize;
    Engine e(o);
    std::vector<std::shared_ptr<const BatchOutput>> outs;
    AlignedBuffer in((16) * sizeof(float));
    for (int k = 1; k <= 8; ++k) {
      std::fill(in.data<float>(), in.data<float>() + 16, static_cast<float>(k));
      outs.push_back(e.run(in.data<float>(), 1));
    }
    for (int k = 1; k <= 8; ++k) {
      const TensorView& t = outs[k - 1]->tensors()[0];
      ASSERT_EQ(t.dims, (std::vector<std::int64_t>{1, 1}));
      EXPECT_FLOAT_EQ(t.f32()[0], static_cast<float>(k))
          << "frame " << k << " optimize " << optimize;
    }
  }
}

TEST(EngineInputLayout, NhwcModelGetsThePlainSlot) {
  EngineOptions o = opts("identity.pt", 8, 6);
  o.input_nhwc = true;
  Engine e(o);
  AlignedBuffer in((6 * 8 * 3) * sizeof(float));
  fill_ramp(in);
  const auto out = e.run(in.data<float>(), 1);
  const TensorView& t = out->tensors()[0];
  // x * 1.0 of an [N,H,W,C] view: the same shape and bytes as the slot.
  ASSERT_EQ(t.dims, (std::vector<std::int64_t>{1, 6, 8, 3}));
  for (int i = 0; i < 6 * 8 * 3; ++i) ASSERT_FLOAT_EQ(t.f32()[i], in.data<float>()[i]);
}

TEST(EngineInputLayoutErrors, NhwcShapeNamedWhenTheModelRefusesIt) {
  EngineOptions o = opts("wrong_channels.pt", 16, 16);
  o.input_nhwc = true;
  const auto msg = load_error(o, ErrorKind::kModelInvalid);
  EXPECT_NE(msg.find("1x16x16x3 (NHWC)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input_layout"), std::string::npos) << msg;
}

TEST(EngineProgress, StagesInOrderCountingWarmUpRuns) {
  EngineOptions o = opts("tiny_classifier.pt", 48, 32);
  o.warmup_batch_sizes = {3, 2, 1};  // x warmup_runs 2 = 6 runs
  std::vector<LoadProgress> seen;
  o.on_progress = [&](const LoadProgress& p) { seen.push_back(p); };
  Engine e(o);
  std::vector<std::string> stages;
  std::vector<int> done;
  for (const auto& p : seen) {
    stages.push_back(to_string(p.stage));
    done.push_back(p.done);
    EXPECT_EQ(p.total, 6);
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"read", "optimize", "warmup", "warmup", "warmup",
                                              "warmup", "warmup", "warmup", "warmup"}));
  EXPECT_EQ(done, (std::vector<int>{0, 0, 0, 1, 2, 3, 4, 5, 6}));
  for (std::size_t i = 1; i < seen.size(); ++i)
    EXPECT_GE(seen[i].elapsed_ms, seen[i - 1].elapsed_ms);
  EXPECT_FALSE(e.options().on_progress) << "the callback must not outlive the load";
}

TEST(EngineProgress, SizesBelowOneAreNeitherRunNorCounted) {
  EngineOptions o = opts("identity.pt", 8, 6);
  o.warmup_batch_sizes = {0, 2, -1};
  o.warmup_runs = 3;
  std::vector<int> totals;
  o.on_progress = [&](const LoadProgress& p) { totals.push_back(p.total); };
  Engine e(o);
  EXPECT_EQ(totals, (std::vector<int>(6, 3)));  // read, optimize, warmup 0..3
}

TEST(EngineProgressErrors, AThrowingCallbackDoesNotFailTheLoad) {
  EngineOptions o = opts("identity.pt", 8, 6);
  int calls = 0;
  o.on_progress = [&](const LoadProgress&) {
    ++calls;
    throw std::runtime_error("listener broke");
  };
  Engine e(o);
  EXPECT_EQ(calls, 5);  // read, optimize, warmup 0/2, 1/2, 2/2
}
