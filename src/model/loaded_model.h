// A model ready to run batches: what the batcher runs and what the streams
// need to preprocess for it. Immutable once built; a hot reload builds a new
// one and the batcher switches between batches.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/model_config.h"

namespace torchinfer {

class BatchOutput;
class Engine;

struct LoadedModel {
  using RunFn = std::function<std::shared_ptr<const BatchOutput>(const void* input, int batch)>;

  std::string path;  // the model file
  ModelConfig config;
  std::shared_ptr<Engine> engine;  // null with a test runner
  RunFn run;                       // throws on failure
  std::size_t slot_bytes = 0;      // one preprocessed frame
  double batch_ms = 0;  // a full batch's forward(): timed up to 8 frames, else scaled from 8
  int generation = 1;   // 1 for the first model, +1 per reload
  // Zero-fills a new batch buffer from the inference threads (NUMA first
  // touch); optional.
  std::function<void(void* data, std::size_t bytes)> first_touch;
};

}  // namespace torchinfer
