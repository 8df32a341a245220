// Builds a LoadedModel: loads and optimises the engine, warms it up at the
// batch sizes of warmup_batch_sizes() only, and times a full batch for the
// latency the element reports. A partial batch (timeout, EOS) of another
// size runs as it is: measured, its first call costs no more than a steady
// one, while padding it to a warmed size costs the padded frames
// (docs/tuning.md, "Warm-up").
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model/loaded_model.h"

namespace torchinfer {

// The sizes warmed for a batcher of `batch_size`: the powers of two below it
// and batch_size itself, largest first (precision=auto times the first).
// Warming every size 1..64 ran 2080 frames x warm-up runs: 36-42 s.
std::vector<int> warmup_batch_sizes(int batch_size);

std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation = 1);

}  // namespace torchinfer
