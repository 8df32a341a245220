#include "batching/model_registry.h"

#include "common/error.h"

namespace torchinfer {

ModelRegistry& ModelRegistry::instance() {
  static ModelRegistry* registry = new ModelRegistry();  // never destroyed: used at exit
  return *registry;
}

std::shared_ptr<Batcher> ModelRegistry::acquire(
    const std::string& id, const SharingKey& key,
    const std::function<std::shared_ptr<Batcher>()>& make) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->first != id && it->second->batcher.expired() && it->second.use_count() == 1)
        it = entries_.erase(it);
      else
        ++it;
    }
    auto& slot = entries_[id];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard<std::mutex> lk(entry->mu);
  if (std::shared_ptr<Batcher> b = entry->batcher.lock()) {
    for (std::size_t i = 0; i < key.size() && i < entry->key.size(); ++i)
      if (key[i] != entry->key[i])
        throw Error(ErrorKind::kConfigInvalid,
                    "elements sharing model-instance-id '" + id + "' must use the same " +
                        key[i].first + " (the running one has '" + entry->key[i].second +
                        "', this one '" + key[i].second + "')");
    return b;
  }
  std::shared_ptr<Batcher> b = make();
  entry->key = key;
  entry->batcher = b;
  return b;
}

std::shared_ptr<const LoadedModel> ModelRegistry::reload(const std::string& id,
                                                         const SharingKey& key,
                                                         const LoadFn& load) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end()) entry = it->second;
  }
  std::shared_ptr<Batcher> batcher;
  std::unique_lock<std::mutex> lk;
  if (entry) {
    lk = std::unique_lock<std::mutex>(entry->mu);
    batcher = entry->batcher.lock();
  }
  if (!batcher)
    throw Error(ErrorKind::kNotFound,
                "no element holds model-instance-id '" + id + "': nothing to reload");
  std::shared_ptr<const LoadedModel> model = reload_batcher(*batcher, load);
  entry->key = key;
  return model;
}

std::shared_ptr<const LoadedModel> reload_batcher(Batcher& batcher,
                                                  const ModelRegistry::LoadFn& load) {
  std::shared_ptr<const LoadedModel> model = load(batcher.model()->generation + 1);
  batcher.replace_model(model);
  return model;
}

long ModelRegistry::users(const std::string& id) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return 0;
    entry = it->second;
  }
  std::lock_guard<std::mutex> lk(entry->mu);
  return entry->batcher.use_count();
}

}  // namespace torchinfer
