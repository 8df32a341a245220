// A model ready to run batches: what the batcher runs and what the streams
// need to preprocess for it. Immutable once built; a hot reload builds a new
// one and the batcher switches between batches.
#pragma once

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

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
  // Calls fn(i, worker) for every i in 0..n-1 on the threads `run` uses
  // (from the thread that calls `run`); worker is 0..threads-1, unique among
  // the calls running at once. Optional: without it the batcher calls fn
  // on its own thread with worker 0. fn must not throw.
  using ParallelFn = std::function<void(int n, const std::function<void(int i, int worker)>& fn)>;
  ParallelFn parallel_for;
  int threads = 1;  // the inference threads: workers parallel_for may use
  // Runs fn on this lane's own thread, the one that loaded it, runs its
  // forward() and frees it (engine.h, "Threads"); the batcher runs the
  // lane's worker loop there. Optional: without it the batcher gives the
  // lane a thread of its own.
  using PostFn = std::function<std::future<void>(std::function<void()> fn)>;
  PostFn post;

  // Lanes 1..K-1 of a model loaded `lanes`=K times (model_loader.h): the
  // same file on disjoint cores, so that K batches run at once. Each lane
  // has its own engine, run, parallel_for and threads; this object is lane
  // 0.
  std::vector<std::shared_ptr<const LoadedModel>> more_lanes;
  // This lane's workers as the batcher numbers them for SlotPrepare:
  // worker_base + 0..threads-1, unique across the lanes running at once.
  int worker_base = 0;
  int lane_count() const { return 1 + static_cast<int>(more_lanes.size()); }
  const LoadedModel& lane(int i) const { return i <= 0 ? *this : *more_lanes[i - 1]; }
  // Inference threads of all lanes (the workers parallel_for may number).
  int total_threads() const {
    int n = threads;
    for (const auto& l : more_lanes) n += l->threads;
    return n;
  }
};

}  // namespace torchinfer
