#include "model/model_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "common/aligned_buffer.h"
#include "common/error.h"

#include "common/memory_error.h"

namespace torchinfer {

int timed_batch_size(int batch_size) {
  return std::clamp(batch_size, 1, 8);
}

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation) {
  const auto start = std::chrono::steady_clock::now();
  batch_size = std::max(1, batch_size);
  options.warmup_batch_sizes = kWarmupBatchSizes;
  options.precision_batch = batch_size;
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
  m->threads = engine->info().threads;

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
    const Error oom = input_too_large(config.input_width, config.input_height, config.channels(),
                                      batch_size, config.input_uint8 ? 1 : 4, e);
    throw Error(oom.kind(), "model '" + options.model_path + "': " + oom.what());
  }
  return m;
}

}  // namespace torchinfer
