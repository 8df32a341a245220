// Process-wide table of batchers shared by `model-instance-id`: elements that
// name the same id share one loaded model and one batcher, so frames from
// several cameras fill one batch. A batcher lives while an element holds it.
// A hot reload is an operation of the shared instance (reload()): the
// batcher's model, the settings later elements must agree with and the
// generation change once for every element sharing it, and each element
// reads the running model from the batcher (Batcher::model()).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "batching/batcher.h"

namespace torchinfer {

// The settings that must agree between elements sharing an id, as
// (name, value) pairs in a fixed order.
using SharingKey = std::vector<std::pair<std::string, std::string>>;

class ModelRegistry {
 public:
  static ModelRegistry& instance();

  // The batcher shared under id, made by make() if there is none. Throws
  // Error(kConfigInvalid) naming the first setting that differs from the
  // elements already sharing it. Loading runs under a per-id lock only, so
  // other ids load in parallel.
  std::shared_ptr<Batcher> acquire(const std::string& id, const SharingKey& key,
                                   const std::function<std::shared_ptr<Batcher>()>& make);

  using LoadFn = std::function<std::shared_ptr<const LoadedModel>(int generation)>;

  // Hot reload of id's instance: load(g) builds the new model as generation
  // g (the running model's + 1), the batcher runs it from its next batch,
  // and later acquire() calls must agree with `key`. Runs under id's lock:
  // an element joining meanwhile waits and then meets the new key. Throws
  // what load() throws (the running model stays, key and generation too)
  // and Error(kNotFound) when no element holds id.
  std::shared_ptr<const LoadedModel> reload(const std::string& id, const SharingKey& key,
                                            const LoadFn& load);

  // Elements currently holding id's batcher.
  long users(const std::string& id);

 private:
  struct Entry {
    std::mutex mu;
    SharingKey key;
    std::weak_ptr<Batcher> batcher;
  };
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

// Reloads the model of a batcher nobody shares (no model-instance-id) the
// way ModelRegistry::reload() does a shared one: load(running generation +
// 1), then Batcher::replace_model(). Throws what load() throws.
std::shared_ptr<const LoadedModel> reload_batcher(Batcher& batcher,
                                                  const ModelRegistry::LoadFn& load);

}  // namespace torchinfer
