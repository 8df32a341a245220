// Builds a LoadedModel: loads and optimises the engine, warms it up at
// batch size 1 only (kWarmupBatchSizes) and times one batch of
// timed_batch_size() frames for batch_ms. The one-off costs of a first call
// (profiling run, graph compilation, weight reorders) do not depend on the
// batch size, and on CPU the optimised graph carries no shape guards, so a
// full batch runs at its steady speed from its second call on and pays only
// the oneDNN primitives and memory of its size on its first. Warming the
// full batch too cost whole batches before the first frame (docs/tuning.md,
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

// The batch load_model() times for batch_ms: the full batch up to 8 frames
// (exact, and the full batch's first call is then behind the load), else 8
// frames scaled to the batch. One run of 1 frame scaled 64x read 16x a full
// batch on 2 loaded cores: each layer's barrier waits out a time slice when
// another process holds a core, a cost per run, not per frame.
int timed_batch_size(int batch_size);

// lanes > 1 loads the model that many times, one lane per part of the
// cores (split_cores(): `options.cores`, else every core this process may
// use), so that as many batches run at once (LoadedModel::more_lanes).
// `options.threads` is then the total, shared out over the lanes (0 = one
// per core of each lane). The lanes load side by side; where lane 0 may
// pick bf16 by timing (may_choose_bf16) the others load after it and run
// its choice. batch_ms is lane 0's. Throws Error(kConfigInvalid) for fewer
// cores or threads than lanes.
std::shared_ptr<const LoadedModel> load_model(EngineOptions options, const ModelConfig& config,
                                              int batch_size, int generation = 1, int lanes = 1);

// Most lanes one model may be loaded as.
constexpr int kMaxLanes = 64;

}  // namespace torchinfer
