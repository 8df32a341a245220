// torchinfer-bench: engine figures the issue tracks, as medians of one run.
//
//   overhead --model M.pt [--batch 1] [--threads 2] [--iters 30] [--size 224]
//       Engine::run vs a bare libtorch loop on the same optimised model, same
//       batch and threads, interleaved in blocks so load hits both alike.
//   compare --fp32 A.pt --int8 B.pt [--batch 1] [--threads 2] [--iters 30] [--block 6]
//       fp32 vs int8 median latency through the engine.
//   table --model M.pt [--batches 1,2,4,8] [--threads-list 1,2] [--iters 20]
//       images/s, p50 and p99 latency per batch x threads.
//   bare --model M.pt [--batch 1] [--threads 2] [--iters 30] [--width W --height H]
//       [--precision int8] [--camera 1920x1080]: only the bare libtorch loop
//       (the upper bound of tests/bench/compare.sh): one key=value line with
//       images/s, p50, p99, CPU ms per image and peak RSS (a tuple or dict
//       output: its first tensor is read). --camera: each
//       iteration first preprocesses `batch` YUY2 frames of that size with
//       the project's Preprocessor on the calling thread, as a hand-written
//       app would (tests/bench/element_vs_bare.sh).
//   startup --model M.pt [--batch 64] [--rule new|old|both] [--reps 3] [--threads 2]
//       [--warmup 3]: time from the start of a load to the model being ready
//       and to the first full batch's result, as the element loads it (new,
//       load_model) or as 1dce655 did (old: warm-up at the powers of two
//       below batch and batch, then one timed full batch); both = interleaved.
//       Medians of `reps` fresh engines (tests/bench/startup.sh runs the set).
//   calls --model M.pt [--warm 64] [--warm-runs 1] [--sizes 64,64,32,5] [--reps 1]
//       Wall and CPU ms of each call on a fresh engine warmed at `warm`.
//   partial --model M.pt [--batch 8] [--fill 5] [--iters 20] [--reps 3]
//       A partial batch of `fill` frames on an engine warmed at `batch` only:
//       padded to `batch` vs run at `fill` unwarmed, first call (fresh engine
//       per rep) and steady state, interleaved.
//   loop --model M.pt [--batch 1] [--threads 2] [--iters 40] [--precision int8]
//       [--work-us 0]: Engine::run back to back, with `work-us` of busy work
//       per frame on the calling thread between batches (what the streaming
//       thread's preprocessing costs in a pipeline); one key=value line:
//       images/s, p50 and p99 of run(), CPU ms per image. The OpenMP wait
//       policy is read from the environment (tests/bench/wait_policy.sh).
// Add --cores LIST to pin the engine. --iters 1 is the smoke test meson runs.
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <time.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "common/aligned_buffer.h"
#include "engine/engine.h"
#include "model/model_loader.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using Clock = std::chrono::steady_clock;

namespace {

bench::Args args;
double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

EngineOptions engine_opts(const std::string& model, int batch, int threads) {
  EngineOptions o;
  o.model_path = model;
  o.input_width = args.num("width", args.num("size", 224));
  o.input_height = args.num("height", args.num("size", 224));
  o.warmup_batch_sizes = {batch};
  o.threads = threads;
  o.precision = Precision::kFp32;
  o.optimize = args.num("optimize", 1) != 0;
  if (args.has("cores")) o.cores = args.str("cores", "");
  return o;
}

AlignedBuffer input(int batch) {
  const int s = args.num("size", 224);
  const std::size_t n =
      static_cast<std::size_t>(batch) * args.num("width", s) * args.num("height", s) * 3;
  AlignedBuffer b(n * sizeof(float));
  float* v = b.data<float>();
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 255) / 128.f - 1;
  return b;
}

// `iters` timed calls of run() (between(), if any, runs before each, not
// timed); prints one key=value line: frames, images/s, p50 and p99 of a
// call, CPU ms per image of the whole process, and peak RSS when asked.
void timed_runs(int iters, int batch, const std::function<void()>& between,
                const std::function<void()>& run, bool rss) {
  rusage u0{}, u1{};
  getrusage(RUSAGE_SELF, &u0);
  std::vector<double> t;
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (between) between();
    const auto t0 = Clock::now();
    run();
    t.push_back(ms(t0, Clock::now()));
  }
  const double wall = ms(start, Clock::now());
  getrusage(RUSAGE_SELF, &u1);
  auto sec = [](const timeval& a) { return a.tv_sec + a.tv_usec / 1e6; };
  const double cpu = sec(u1.ru_utime) - sec(u0.ru_utime) + sec(u1.ru_stime) - sec(u0.ru_stime);
  std::printf("frames=%d fps=%.3f p50=%.3f p99=%.3f cpu_ms=%.3f", iters * batch,
              1000.0 * iters * batch / wall, pct(t, 0.5), pct(t, 0.99),
              1000.0 * cpu / (iters * batch));
  if (rss) std::printf(" rss_kb=%ld", u1.ru_maxrss);
  std::printf("\n");
}

int overhead() {
  const std::string model = args.str("model", "");
  const int batch = args.num("batch", 1), threads = args.num("threads", 2),
            iters = args.num("iters", 30);
  const int s = args.num("size", 224);
  Engine engine(engine_opts(model, batch, threads));
  AlignedBuffer in = input(batch);

  // The bare program: what a user would write with libtorch directly.
  at::set_num_threads(threads);
  torch::jit::Module m = torch::jit::load(model);
  m.eval();
  torch::jit::Module frozen = torch::jit::freeze(m);
  m = torch::jit::optimize_for_inference(frozen);
  auto bare = [&] {
    c10::InferenceMode guard;
    at::Tensor x = torch::from_blob(in.data(), {batch, 3, s, s}, {s * s * 3, 1, s * 3, 3});
    at::Tensor y = m.forward({x}).toTensor().contiguous();
    return y.data_ptr<float>()[0];
  };
  for (int i = 0; i < 3; ++i) bare();

  std::vector<double> te, tb;
  const int block = 5;
  for (int done = 0; done < iters; done += block) {
    for (int i = 0; i < block && done + i < iters; ++i) {
      auto t0 = Clock::now();
      engine.run(in.data(), batch);
      te.push_back(ms(t0, Clock::now()));
    }
    for (int i = 0; i < block && done + i < iters; ++i) {
      auto t0 = Clock::now();
      bare();
      tb.push_back(ms(t0, Clock::now()));
    }
  }
  const double e = pct(te, 0.5), b = pct(tb, 0.5);
  std::printf(
      "overhead model=%s batch=%d threads=%d iters=%d: engine p50 %.3f ms, bare libtorch "
      "p50 %.3f ms, engine/bare %.3f (%+.1f%%)\n",
      model.c_str(), batch, threads, iters, e, b, e / b, (e / b - 1) * 100);
  return 0;
}

int bare() {
  const std::string model = args.str("model", "");
  const int batch = args.num("batch", 1), threads = args.num("threads", 2),
            iters = args.num("iters", 30);
  const int w = args.num("width", args.num("size", 224)),
            h = args.num("height", args.num("size", 224));
  const bool int8 = args.str("precision", "fp32") == "int8";
  // bf16 as the engine runs it: weights converted, frozen only, input cast
  // inside the timed call.
  const bool bf16 = args.str("precision", "fp32") == "bf16";
  if (int8) {
    const auto& q = at::globalContext().supportedQEngines();
    if (std::find(q.begin(), q.end(), at::QEngine::ONEDNN) != q.end())
      at::globalContext().setQEngine(at::QEngine::ONEDNN);
  }
  at::set_num_threads(threads);
  torch::jit::Module m = torch::jit::load(model);
  m.eval();
  if (bf16) m.to(at::kBFloat16);
  m = torch::jit::freeze(m);
  // optimize_for_inference slows the quantized kernels down (docs/tuning.md).
  if (!int8 && !bf16) m = torch::jit::optimize_for_inference(m);
  AlignedBuffer in = input(batch);
  // A camera frame (mid grey, one allocation reused) for --camera.
  const std::string camera = args.str("camera", "");
  int cw = 0, ch = 0;
  if (!camera.empty() && std::sscanf(camera.c_str(), "%dx%d", &cw, &ch) != 2) {
    std::fprintf(stderr, "--camera wants WIDTHxHEIGHT\n");
    return 2;
  }
  std::vector<std::uint8_t> yuy2(static_cast<std::size_t>(cw) * ch * 2, 128);
  FrameView frame;
  frame.format = PixelFormat::kYUY2;
  frame.width = cw;
  frame.height = ch;
  frame.planes[0] = yuy2.data();
  frame.strides[0] = cw * 2;
  PreprocessOptions po;
  po.out_width = w;
  po.out_height = h;
  Preprocessor pre(po);
  auto once = [&] {
    for (int k = 0; camera.size() && k < batch; ++k)
      pre.run(frame, in.data<float>() + static_cast<std::size_t>(k) * w * h * 3);
    c10::InferenceMode guard;
    at::Tensor x = torch::from_blob(in.data(), {batch, 3, h, w}, {h * w * 3, 1, w * 3, 3});
    at::IValue out = m.forward({bf16 ? x.to(at::kBFloat16) : x});
    // Tuple and dict outputs (anomaly models: {anomaly_map, pred_score}): the first one.
    at::Tensor y = out.isTuple()         ? out.toTuple()->elements()[0].toTensor()
                   : out.isGenericDict() ? out.toGenericDict().begin()->value().toTensor()
                                         : out.toTensor();
    return y.to(at::kFloat).contiguous().data_ptr<float>()[0];
  };
  for (int i = 0; i < 3; ++i) once();
  timed_runs(
      iters, batch, nullptr, [&] { once(); }, true);
  return 0;
}

int compare() {
  const int batch = args.num("batch", 1), threads = args.num("threads", 2),
            iters = args.num("iters", 30);
  EngineOptions fo = engine_opts(args.str("fp32", ""), batch, threads);
  EngineOptions qo = engine_opts(args.str("int8", ""), batch, threads);
  qo.precision = Precision::kInt8;
  qo.optimize = args.num("int8-optimize", 1) != 0;
  Engine f(fo), q(qo);
  AlignedBuffer in = input(batch);
  // Alternating blocks, so both see the same machine load. The first run of
  // each block is dropped: in a pipeline one model runs alone with its
  // weights in cache, while the run right after a switch pays for reloading
  // them (an int8 MobileNetV2 after the fp32 one: ~1.3x slower).
  const int block = std::max(2, args.num("block", 6));
  std::vector<double> tf, tq;
  for (int done = 0; done < iters; done += block - 1) {
    for (int i = 0; i < block; ++i) {
      const double t = f.run(in.data(), batch)->inference_ms();
      if (i > 0) tf.push_back(t);
    }
    for (int i = 0; i < block; ++i) {
      const double t = q.run(in.data(), batch)->inference_ms();
      if (i > 0) tq.push_back(t);
    }
  }
  const double a = pct(tf, 0.5), b = pct(tq, 0.5);
  std::printf(
      "compare batch=%d threads=%d iters=%d: fp32 %s p50 %.3f ms, int8 %s p50 %.3f ms, "
      "speed-up %.2fx\n",
      batch, threads, iters, fo.model_path.c_str(), a, qo.model_path.c_str(), b, a / b);
  return 0;
}

int table() {
  const std::string model = args.str("model", "");
  const int iters = args.num("iters", 20);
  std::printf(
      "| model | batch | threads | images/s | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n");
  for (int threads : args.nums("threads-list", "1,2"))
    for (int batch : args.nums("batches", "1,2,4,8")) {
      EngineOptions o = engine_opts(model, batch, threads);
      if (args.str("precision", "") == "int8") o.precision = Precision::kInt8;
      Engine e(o);
      AlignedBuffer in = input(batch);
      std::vector<double> t;
      for (int i = 0; i < iters; ++i) t.push_back(e.run(in.data(), batch)->inference_ms());
      const double p50 = pct(t, 0.5);
      std::printf("| %s | %d | %d | %.1f | %.2f | %.2f |\n", model.c_str(), batch, threads,
                  1000.0 * batch / p50, p50, pct(t, 0.99));
      std::fflush(stdout);
    }
  return 0;
}

// Busy work for `us` microseconds of this thread's CPU time: stands in for
// preprocessing, which competes with spinning OpenMP workers for the cores.
void burn_cpu_us(double us) {
  if (us <= 0) return;
  timespec t0{}, t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  volatile double sink = 0;
  do {
    for (int i = 0; i < 200; ++i) sink = sink + i * 0.5;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) / 1e3 < us);
}

int loop() {
  const int batch = args.num("batch", 1), iters = args.num("iters", 40);
  EngineOptions o = engine_opts(args.str("model", ""), batch, args.num("threads", 2));
  if (args.str("precision", "fp32") == "int8") o.precision = Precision::kInt8;
  const double work_us = std::atof(args.str("work-us", "0").c_str()) * batch;
  Engine e(o);
  AlignedBuffer in = input(batch);
  for (int i = 0; i < 2; ++i) e.run(in.data(), batch);
  timed_runs(
      iters, batch, [&] { burn_cpu_us(work_us); }, [&] { e.run(in.data(), batch); }, false);
  return 0;
}

// The warm-up sizes before issue 16 item 5: the powers of two below batch
// and batch, largest first.
std::vector<int> pow2_sizes(int batch) {
  std::vector<int> out{batch};
  for (int b = 1; b < batch; b *= 2) out.insert(out.begin() + 1, b);
  return out;
}

// One start: the load as the element does it, then the first full batch
// (the first result). rule "old" = 1dce655's loader: pow2 sizes x warmup
// runs, then one timed full batch for batch_ms.
struct Start {
  double read = 0, optimize = 0, warmup = 0, ready = 0, first = 0;
  double first_batch = 0, second_batch = 0, batch_ms = 0;  // run() times; batch_ms as loaded
};
Start one_start(const std::string& rule, int batch, const AlignedBuffer& in) {
  EngineOptions o = engine_opts(args.str("model", ""), batch, args.num("threads", 2));
  o.warmup_runs = args.num("warmup", 3);
  ModelConfig config;
  config.input_width = o.input_width;
  config.input_height = o.input_height;
  Start s;
  const auto t0 = Clock::now();
  std::shared_ptr<Engine> engine;
  if (rule == "old") {
    o.warmup_batch_sizes = pow2_sizes(batch);
    engine = std::make_shared<Engine>(o);
    AlignedBuffer zeros(in.bytes());
    s.batch_ms = engine->run(zeros.data(), batch)->inference_ms();
  } else {
    auto m = load_model(o, config, batch);
    engine = m->engine;
    s.batch_ms = m->batch_ms;
  }
  s.ready = ms(t0, Clock::now());
  engine->run(in.data(), batch);
  s.first = ms(t0, Clock::now());
  s.first_batch = s.first - s.ready;
  // The next full batch, at steady speed under both rules: the first
  // batch's spike is first_batch - second_batch.
  const auto t1 = Clock::now();
  engine->run(in.data(), batch);
  s.second_batch = ms(t1, Clock::now());
  const EngineInfo& i = engine->info();
  s.read = i.load_ms;
  s.optimize = i.optimize_ms;
  s.warmup = i.warmup_ms;
  return s;
}

int startup() {
  const int batch = args.num("batch", 64), reps = args.num("reps", 3);
  std::vector<std::string> rules{args.str("rule", "new")};
  if (rules[0] == "both") rules = {"old", "new"};
  AlignedBuffer in = input(batch);
  std::map<std::string, std::vector<Start>> got;
  for (int rep = 0; rep < reps; ++rep)  // interleaved, so load hits every rule alike
    for (const auto& r : rules) got[r].push_back(one_start(r, batch, in));
  for (const auto& r : rules) {
    auto med = [&](double Start::*f) {
      std::vector<double> v;
      for (const Start& s : got[r]) v.push_back(s.*f);
      return pct(v, .5);
    };
    std::printf(
        "startup rule=%s batch=%d reps=%d medians: read %.0f, optimize %.0f, warm-up %.0f, "
        "ready %.0f, first result %.0f ms; batches 1st %.0f, 2nd %.0f, batch_ms %.0f\n",
        r.c_str(), batch, reps, med(&Start::read), med(&Start::optimize), med(&Start::warmup),
        med(&Start::ready), med(&Start::first), med(&Start::first_batch), med(&Start::second_batch),
        med(&Start::batch_ms));
  }
  return 0;
}

double cpu_ms_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms_of = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms_of(u.ru_utime) + ms_of(u.ru_stime);
}

// Per-call times on a fresh engine warmed at `warm` with `warm-runs` each:
// what the first calls at each size cost after the load (diagnosis of the
// warm-up rule; medians over `reps` fresh engines, wall/CPU ms of the
// process, CPU being less swayed by other processes on a shared machine).
int calls() {
  const std::vector<int> sizes = args.nums("sizes", "64,64,64,32,32,5,5");
  EngineOptions o = engine_opts(args.str("model", ""), 1, args.num("threads", 2));
  o.warmup_batch_sizes = args.nums("warm", "64");
  o.warmup_runs = args.num("warm-runs", 1);
  AlignedBuffer in = input(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<double> load, load_cpu;
  std::vector<std::vector<double>> t(sizes.size()), c(sizes.size());
  for (int rep = 0; rep < args.num("reps", 1); ++rep) {
    auto t0 = Clock::now();
    double c0 = cpu_ms_now();
    Engine engine(o);
    load.push_back(ms(t0, Clock::now()));
    load_cpu.push_back(cpu_ms_now() - c0);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      t0 = Clock::now();
      c0 = cpu_ms_now();
      engine.run(in.data(), sizes[i]);
      t[i].push_back(ms(t0, Clock::now()));
      c[i].push_back(cpu_ms_now() - c0);
    }
  }
  std::printf("calls warm=%s runs=%d load=%.0f/%.0f:", args.str("warm", "64").c_str(),
              o.warmup_runs, pct(load, .5), pct(load_cpu, .5));
  for (std::size_t i = 0; i < sizes.size(); ++i)
    std::printf(" %d:%.0f/%.0f", sizes[i], pct(t[i], .5), pct(c[i], .5));
  std::printf(" (wall/cpu ms)\n");
  return 0;
}

int partial() {
  const int batch = args.num("batch", 8), fill = args.num("fill", 5), iters = args.num("iters", 20);
  // The profiling executor may specialise again on a new size's 2nd call:
  // the first three calls at `fill` are kept apart.
  std::vector<double> first[3], pad, unpadded;
  AlignedBuffer in = input(batch);
  for (int rep = 0; rep < args.num("reps", 3); ++rep) {
    Engine engine(engine_opts(args.str("model", ""), batch, args.num("threads", 2)));
    auto timed = [&](int b) {
      auto t0 = Clock::now();
      engine.run(in.data(), b);
      return ms(t0, Clock::now());
    };
    for (auto& f : first) {
      f.push_back(timed(fill));
      pad.push_back(timed(batch));
    }
    for (int i = 0; i < iters; ++i) {
      unpadded.push_back(timed(fill));
      pad.push_back(timed(batch));
    }
  }
  std::printf(
      "partial fill=%d batch=%d unwarmed_%d calls 1/2/3 p50: %.1f/%.1f/%.1f ms, then %.1f ms; "
      "padded_%d p50 %.1f ms\n",
      fill, batch, fill, pct(first[0], .5), pct(first[1], .5), pct(first[2], .5), pct(unpadded, .5),
      batch, pct(pad, .5));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: torchinfer-bench overhead|compare|table|bare --key value ...\n");
    return 64;
  }
  args.parse(argc, argv);
  const std::string mode = argv[1];
  try {
    if (mode == "overhead") return overhead();
    if (mode == "compare") return compare();
    if (mode == "table") return table();
    if (mode == "bare") return bare();
    if (mode == "startup") return startup();
    if (mode == "partial") return partial();
    if (mode == "calls") return calls();
    if (mode == "loop") return loop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 64;
}
