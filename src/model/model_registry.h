// Process-wide table of batchers shared by `model-instance-id`: elements that
// name the same id share one loaded model and one batcher, so frames from
// several cameras fill one batch. A batcher lives while an element holds it.
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

}  // namespace torchinfer
