// Builds a LoadedModel: loads and optimises the engine, warms it up at every
// batch size a batcher of `batch_size` can run (partial batches at timeouts
// and EOS included, so none of them pays a first-run cost on the stream),
// and times a full batch for the latency the element reports.
#pragma once

#include <memory>

#include "model/loaded_model.h"
#include "engine/engine.h"

namespace torchinfer {

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation = 1);

}  // namespace torchinfer
