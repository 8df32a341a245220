#include "model/model_loader.h"

#include <algorithm>

#include "common/aligned_buffer.h"

#include "common/memory_error.h"

namespace torchinfer {

std::vector<int> warmup_batch_sizes(int batch_size) {
  std::vector<int> sizes{std::max(1, batch_size)};
  for (int b = 1; b < batch_size; b *= 2) sizes.insert(sizes.begin() + 1, b);
  return sizes;
}

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation) {
  options.warmup_batch_sizes = warmup_batch_sizes(batch_size);
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

  try {
    const AlignedBuffer zeros(m->slot_bytes * static_cast<std::size_t>(batch_size));
    m->batch_ms = engine->run(zeros.data(), batch_size)->inference_ms();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    const Error oom = input_too_large(config.input_width, config.input_height, config.channels(),
                                      batch_size, config.input_uint8 ? 1 : 4, e);
    throw Error(oom.kind(), "model '" + options.model_path + "': " + oom.what());
  }
  return m;
}

}  // namespace torchinfer
