// Builds a LoadedModel: loads and optimises the engine and warms it up at
// batch size 1 only (kWarmupBatchSizes). The one-off costs of a first call
// (profiling run, graph compilation, weight reorders) do not depend on the
// batch size, and on CPU the optimised graph carries no shape guards, so a
// full batch runs at its steady speed from its first call on, less the
// oneDNN primitives and memory it builds for its size once. Warming the full
// batch too would cost whole batches before the first frame (docs/tuning.md,
// "warmup, optimize"). Partial batches (timeout, EOS) run at their own size,
// unpadded: padding costs the padded frames on every partial batch.
#pragma once

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model/loaded_model.h"

namespace torchinfer {

// What load_model() sets EngineOptions::warmup_batch_sizes to, whatever the
// batch size.
inline const std::vector<int> kWarmupBatchSizes{1};

// `batch_ms` is the fastest warm-up run after the first (at batch 1)
// scaled to `batch_size` frames, not a full batch timed (that would cost a
// whole batch before the first frame); see docs/tuning.md for how it
// compares with the measured full batch.
std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation = 1);

}  // namespace torchinfer
