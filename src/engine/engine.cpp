// The engine's thread and what runs on it: the load (model_load.cpp,
// precision.cpp), forward() and the public calls that reach it.
#include "engine/engine.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <torch/script.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

#include "common/cpu_set.h"
#include "common/error.h"
#include "common/memory_error.h"
#include "engine/batch_output.h"
#include "engine/engine_impl.h"
#include "engine/libtorch_messages.h"

namespace torchinfer {

double ms_since(EngineClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(EngineClock::now() - t0).count();
}

// NHWC memory seen as an NCHW tensor with channels_last strides, or as
// itself for an NHWC model: no copy either way.
at::Tensor Engine::Impl::input_view(const void* input, int batch, at::ScalarType dtype) const {
  const int64_t H = opts.input_height, W = opts.input_width, C = opts.channels;
  void* p = const_cast<void*>(input);
  return opts.input_nhwc ? torch::from_blob(p, {batch, H, W, C}, dtype)
                         : torch::from_blob(p, {batch, C, H, W}, {H * W * C, 1, W * C, C}, dtype);
}

std::shared_ptr<const BatchOutput> Engine::Impl::forward(const void* input, int batch) {
  const auto t0 = EngineClock::now();
  const at::Tensor x = input_view(input, batch, opts.input_uint8 ? at::kByte : at::kFloat);
  c10::IValue y;
  {
    c10::InferenceMode guard;
    // .to() preserves the channels_last strides.
    y = module.forward({input_quant ? quantize_input(x, *input_quant)
                        : bf16      ? x.to(at::kBFloat16)
                                    : x});
  }
  return make_batch_output(y, x, module, batch, ms_since(t0));
}

// libgomp keeps one OpenMP team per thread and reuses it for every later
// parallel region (ATen's and oneDNN's), so sizing and pinning the engine
// thread's team once, at load, sticks for the engine's life.
void Engine::Impl::setup_threads() {
  // ATen sets a thread's count from its global one at the thread's first
  // parallel call: let that happen now, not after ours.
  at::internal::lazy_init_num_threads();
  at::set_num_threads(info.threads);
  std::vector<int> tids(static_cast<std::size_t>(info.threads), 0);
  std::vector<std::string> errors(tids.size());
#pragma omp parallel num_threads(info.threads)
  {
    const int t = omp_get_thread_num();
    if (t < static_cast<int>(tids.size())) {
      tids[t] = current_tid();
      if (!info.cores.empty()) {
        try {
          pin_current_thread({info.cores[t % info.cores.size()]});
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      }
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw Error(ErrorKind::kConfigInvalid, e);
  info.thread_ids = tids;
}

// An allocation that failed during the load, outside the steps that name
// their own settings: which step, and what to change.
Error Engine::Impl::out_of_memory_at_load(const std::exception& e) const {
  const EngineOptions& o = opts;
  if (stage == LoadProgress::Stage::kRead)
    return Error(ErrorKind::kConfigInvalid,
                 "out of memory reading model '" + o.model_path + "': " + message_of(e) +
                     "; raise the process's memory limit (ulimit -v, the container's limit) or "
                     "check that the file is the model it should be");
  const bool timing = stage == LoadProgress::Stage::kPrecision;
  const int b = timing
                    ? precision_batch()
                    : *std::max_element(o.warmup_batch_sizes.begin(), o.warmup_batch_sizes.end());
  const Error oom =
      input_too_large(o.input_width, o.input_height, o.channels, std::max(1, b), bytes_per_value(),
                      e, std::string(timing ? "the fp32/bf16 timing" : to_string(stage)));
  return Error(oom.kind(), "model '" + o.model_path + "': " + oom.what());
}

namespace {

void check_options(const EngineOptions& o) {
  if (o.input_width < 1 || o.input_height < 1 || (o.channels != 1 && o.channels != 3))
    throw Error(ErrorKind::kInvalidArgument, "invalid model input geometry");
  if (o.warmup_batch_sizes.empty())
    throw Error(ErrorKind::kInvalidArgument, "no warm-up batch size given");
  if (o.threads < 0 || o.threads > 1024)
    throw Error(ErrorKind::kConfigInvalid,
                "threads=" + std::to_string(o.threads) + " is out of range (0 = automatic)");
}

}  // namespace

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.opts = options;
  check_options(impl.opts);
  // Validated here, on the caller's thread, so a bad list fails fast and
  // names the cores this process really has (taskset, cgroups).
  if (impl.opts.cores) impl.info.cores = resolve_cpu_list(*impl.opts.cores, allowed_cpus());
  impl.info.threads = impl.opts.threads > 0 ? impl.opts.threads : default_threads(impl.info.cores);
  impl.thread = std::make_unique<EngineThread>();
  impl.thread->call([&impl] {
    try {
      impl.load();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      throw impl.out_of_memory_at_load(e);
    }
  });
  // It may point into the caller (an element); nothing reports after load.
  impl.opts.on_progress = nullptr;
}

Engine::~Engine() {
  if (!impl_ || !impl_->thread) return;
  // The module's tensors were made on the engine's thread: freed there too.
  Impl& impl = *impl_;
  if (impl.thread->is_current()) {
    impl.module = torch::jit::Module();
  } else {
    try {
      impl.thread->call([&impl] { impl.module = torch::jit::Module(); });
    } catch (...) {
    }
  }
  impl.thread.reset();
}

namespace {

// body() on the engine's thread: directly when called from there (a
// batcher loop posted with Engine::post), else handed over and waited for.
template <class Body>
void on_engine_thread(EngineThread& thread, Body&& body) {
  if (thread.is_current())
    body();
  else
    thread.call(std::forward<Body>(body));
}

}  // namespace

std::shared_ptr<const BatchOutput> Engine::run(const void* input, int batch) {
  if (!input || batch < 1) throw Error(ErrorKind::kInvalidArgument, "empty batch");
  std::shared_ptr<const BatchOutput> out;
  try {
    on_engine_thread(*impl_->thread, [&] { out = impl_->forward(input, batch); });
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kRuntime, "inference failed: " + message_of(e));
  }
  return out;
}

void Engine::parallel_for(int n, const std::function<void(int, int)>& fn) {
  if (n < 1) return;
  on_engine_thread(*impl_->thread, [&] {
    const int threads = std::min(n, impl_->info.threads);
    if (threads <= 1) {
      for (int i = 0; i < n; ++i) fn(i, 0);
      return;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int i = 0; i < n; ++i) fn(i, omp_get_thread_num());
  });
}

// Short-lived threads pinned one per core, not the engine's team: the
// engine's thread may be busy running a batcher loop, and a caller's own
// OpenMP team would pin the caller. Each thread zeroes one contiguous run
// of pages, so they land on its core's NUMA node.
void Engine::first_touch(void* data, std::size_t bytes) {
  if (!data || bytes == 0) return;
  const std::vector<int>& cores = impl_->info.cores;
  if (cores.empty()) {  // not pinned: no node to place the pages on
    std::memset(data, 0, bytes);
    return;
  }
  constexpr std::size_t kPage = 4096;
  const std::size_t n = std::min(cores.size(), static_cast<std::size_t>(impl_->info.threads));
  const std::size_t pages = (bytes + kPage - 1) / kPage;
  const std::size_t per = (pages + n - 1) / n * kPage;
  std::vector<std::thread> helpers;
  for (std::size_t i = 0; i < n && i * per < bytes; ++i)
    helpers.emplace_back([&, i] {
      try {
        pin_current_thread({cores[i]});
      } catch (...) {  // placement is a hint; the zeroing is what must happen
      }
      std::memset(static_cast<unsigned char*>(data) + i * per, 0, std::min(per, bytes - i * per));
    });
  for (std::thread& t : helpers) t.join();
}

std::future<void> Engine::post(std::function<void()> fn) {
  return impl_->thread->post(std::move(fn));
}

const EngineInfo& Engine::info() const {
  return impl_->info;
}
const EngineOptions& Engine::options() const {
  return impl_->opts;
}

}  // namespace torchinfer
