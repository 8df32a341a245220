#include "model/model_loader.h"

#include <algorithm>

#include "common/aligned_buffer.h"

#include "common/memory_error.h"

namespace torchinfer {

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation) {
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

  // A batch no machine could hold still fails here, not at the first frame:
  // the batch buffer is reserved (untouched) once. Activations that do not
  // fit fail at the first full batch.
  try {
    const AlignedBuffer reserve(m->slot_bytes * static_cast<std::size_t>(batch_size),
                                AlignedBuffer::Init::kNone);
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    const Error oom = input_too_large(config.input_width, config.input_height, config.channels(),
                                      batch_size, config.input_uint8 ? 1 : 4, e);
    throw Error(oom.kind(), "model '" + options.model_path + "': " + oom.what());
  }
  const EngineInfo& info = engine->info();
  m->batch_ms = info.warmup_batch_ms * batch_size / std::max(1, info.warmup_batch);
  return m;
}

}  // namespace torchinfer
