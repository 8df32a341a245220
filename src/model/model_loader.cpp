#include "model/model_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <utility>

#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "common/error.h"
#include "common/memory_error.h"
#include "common/sysinfo.h"

namespace torchinfer {

int timed_batch_size(int batch_size) {
  return std::clamp(batch_size, 1, 8);
}

namespace {

std::shared_ptr<LoadedModel> load_lane(const EngineOptions& options, const ModelConfig& config,
                                       int generation) {
  auto engine = std::make_shared<Engine>(options);
  auto m = std::make_shared<LoadedModel>();
  m->path = options.model_path;
  m->config = config;
  m->engine = engine;
  m->slot_bytes = static_cast<std::size_t>(config.input_width) * config.input_height *
                  config.channels() * (config.input_uint8 ? 1 : sizeof(float));
  m->generation = generation;
  Engine* e = engine.get();
  m->run = [e](const void* input, int batch) { return e->run(input, batch); };
  m->first_touch = [e](void* data, std::size_t bytes) { e->first_touch(data, bytes); };
  m->parallel_for = [e](int n, const std::function<void(int, int)>& fn) { e->parallel_for(n, fn); };
  m->post = [e](std::function<void()> fn) { return e->post(std::move(fn)); };
  m->threads = engine->info().threads;
  return m;
}

// Each lane's options: its share of the cores and of the threads.
std::vector<EngineOptions> lane_options(const EngineOptions& options, int lanes) {
  if (lanes < 1 || lanes > kMaxLanes)
    throw Error(ErrorKind::kConfigInvalid, "lanes=" + std::to_string(lanes) +
                                               " is out of range (1.." + std::to_string(kMaxLanes) +
                                               ")");
  if (lanes == 1) return {options};
  if (options.threads > 0 && options.threads < lanes)
    throw Error(ErrorKind::kConfigInvalid, "threads=" + std::to_string(options.threads) +
                                               " is fewer than lanes=" + std::to_string(lanes) +
                                               ": each lane needs a thread of its own");
  const std::vector<int> cpus =
      options.cores ? resolve_cpu_list(*options.cores, allowed_cpus()) : allowed_cpus();
  const std::vector<std::vector<int>> parts = split_cores(cpus, lanes);
  std::vector<EngineOptions> out;
  for (int i = 0; i < lanes; ++i) {
    EngineOptions o = options;
    o.cores = format_cpu_list(parts[static_cast<std::size_t>(i)]);
    if (options.threads > 0)
      o.threads = options.threads / lanes + (i < options.threads % lanes ? 1 : 0);
    else if (!options.cores)  // as unpinned: one per physical core, not per SMT sibling
      o.threads = physical_cores(parts[static_cast<std::size_t>(i)]);
    if (i > 1) o.on_progress = nullptr;  // lane 0 reports, lane 1 too when it loads after 0
    out.push_back(std::move(o));
  }
  return out;
}

// Starts loading lanes 1.. side by side, each on its own cores. `decided`:
// the precision lane 0 chose, when lane 0 is loaded already because it may
// pick bf16 by timing; lane 1 then reports progress, its times counted from
// the load's start. Without it lane 0 loads at the same time and reports
// for all.
using PendingLanes = std::vector<std::future<std::shared_ptr<LoadedModel>>>;
PendingLanes start_more_lanes(std::vector<EngineOptions>& lanes, const ModelConfig& config,
                              int generation, std::chrono::steady_clock::time_point start,
                              std::optional<Precision> decided) {
  PendingLanes pending;
  for (std::size_t i = 1; i < lanes.size(); ++i) {
    EngineOptions& o = lanes[i];
    if (!decided) {
      o.on_progress = nullptr;
    } else if (o.on_progress) {
      const double before =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      o.on_progress = [report = std::move(o.on_progress), before](const LoadProgress& p) {
        LoadProgress q = p;
        q.elapsed_ms += before;
        report(q);
      };
    }
    if (decided) {
      if (*decided == Precision::kBf16 || *decided == Precision::kFp32) o.precision = *decided;
      o.precision_decided = true;
    }
    pending.push_back(std::async(
        std::launch::async, [o, &config, generation] { return load_lane(o, config, generation); }));
  }
  return pending;
}

// Waits for every lane started; the first failure is rethrown once all ended.
void finish_more_lanes(LoadedModel& first, PendingLanes& pending) {
  int base = first.threads;
  std::exception_ptr failed;
  for (auto& p : pending) {
    try {
      std::shared_ptr<LoadedModel> lane = p.get();
      lane->worker_base = base;
      base += lane->threads;
      first.more_lanes.push_back(std::move(lane));
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation, int lanes) {
  const auto start = std::chrono::steady_clock::now();
  batch_size = std::max(1, batch_size);
  options.warmup_batch_sizes = kWarmupBatchSizes;
  options.precision_batch = batch_size;
  std::vector<EngineOptions> each = lane_options(options, lanes);
  // Only where lane 0 may pick bf16 by timing do the other lanes wait for
  // its choice (every lane must run the same precision).
  const bool wait_for_first = may_choose_bf16(each[0]);
  PendingLanes pending;
  if (!wait_for_first) pending = start_more_lanes(each, config, generation, start, std::nullopt);
  std::shared_ptr<LoadedModel> m;
  try {
    m = load_lane(each[0], config, generation);
  } catch (...) {
    for (auto& p : pending) p.wait();  // they read `each` and `config`
    throw;
  }
  if (wait_for_first)
    pending = start_more_lanes(each, config, generation, start, m->engine->info().precision);
  finish_more_lanes(*m, pending);
  Engine* engine = m->engine.get();

  const int timed = timed_batch_size(batch_size);
  if (options.on_progress) {
    LoadProgress p;
    p.stage = LoadProgress::Stage::kTiming;
    p.done = p.total =
        static_cast<int>(kWarmupBatchSizes.size()) * std::max(1, options.warmup_runs);
    p.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    try {
      options.on_progress(p);
    } catch (...) {  // a report must never fail the load
    }
  }
  // The buffer is reserved for the full batch (only the timed frames are
  // touched), so a batch no machine could hold fails here, not at the first
  // frame; activations that do not fit fail at the first full batch.
  try {
    AlignedBuffer zeros(m->slot_bytes * static_cast<std::size_t>(batch_size),
                        AlignedBuffer::Init::kNone);
    std::memset(zeros.data(), 0, m->slot_bytes * static_cast<std::size_t>(timed));
    m->batch_ms = engine->run(zeros.data(), timed)->inference_ms() * batch_size / timed;
  } catch (const std::exception& e) {
    // The warm-up ran batch 1 only: a model that takes no batch is found here.
    if (!is_out_of_memory(e))
      throw Error(ErrorKind::kModelInvalid,
                  "model '" + options.model_path + "' fails on a batch of " +
                      std::to_string(timed) + " frames (batch-size=" + std::to_string(batch_size) +
                      "): " + e.what() +
                      "; a model that takes one frame at a time needs batch-size=1");
    const Error oom =
        input_too_large(config.input_width, config.input_height, config.channels(), batch_size,
                        config.input_uint8 ? 1 : 4, e, "the batch timing");
    throw Error(oom.kind(), "model '" + options.model_path + "': " + oom.what());
  }
  return m;
}

}  // namespace torchinfer
