// The preprocessors of a model's inference threads, for
// preprocess-on=inference-threads (Batcher SlotPrepare).
//
// The worker_base rule: the batcher numbers the inference threads of all of
// a model's lanes as one team, lane i's threads being
// worker_base(i) + 0..threads(i)-1 (LoadedModel::worker_base), so a worker
// number is unique among the SlotPrepare calls running at the same moment,
// across lanes, and several lanes' batches run at once. Entry w is
// therefore only ever touched by worker w, one call at a time: no lock. A
// Preprocessor keeps per-geometry scratch, so one per worker, never
// shared. A number outside 0..total_threads()-1 (a batch prepared without
// a team) gets a throw-away Preprocessor.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "model/loaded_model.h"
#include "preprocess/preprocess.h"

namespace torchinfer {

class TeamPreprocessors {
 public:
  TeamPreprocessors(std::function<PreprocessOptions(const ModelConfig&)> options_for, int workers)
      : options_for_(std::move(options_for)), entries_(static_cast<std::size_t>(workers)) {}

  Preprocessor& get(const LoadedModel& model, int worker, std::unique_ptr<Preprocessor>& spare) {
    if (worker < 0 || worker >= static_cast<int>(entries_.size())) {
      spare = std::make_unique<Preprocessor>(options_for_(model.config));
      return *spare;
    }
    Entry& e = entries_[static_cast<std::size_t>(worker)];
    // A reload builds a new model (new generation), maybe of another size.
    if (!e.pre || e.model != &model || e.generation != model.generation) {
      e.pre = std::make_unique<Preprocessor>(options_for_(model.config));
      e.model = &model;
      e.generation = model.generation;
    }
    return *e.pre;
  }

 private:
  struct Entry {
    const LoadedModel* model = nullptr;
    int generation = 0;
    std::unique_ptr<Preprocessor> pre;
  };
  std::function<PreprocessOptions(const ModelConfig&)> options_for_;
  std::vector<Entry> entries_;
};

}  // namespace torchinfer
