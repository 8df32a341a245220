// Who is told when a Batcher's model is replaced: every element sharing the
// batcher subscribes once at start, so a reload reaches each of them when it
// happens instead of each checking the model's generation on every frame.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "model/loaded_model.h"

namespace torchinfer {

using ModelListener = std::function<void(const std::shared_ptr<const LoadedModel>&)>;

class ModelListeners {
  struct Shared {
    // Recursive: a listener may end its own subscription (its element
    // stopped from inside the call) on the calling thread.
    std::recursive_mutex mu;
    std::vector<std::pair<std::uint64_t, ModelListener>> list;
    std::uint64_t next = 0;
  };

 public:
  // Ends the subscription when destroyed or reset, waiting for a call in
  // progress on another thread: after that the listener is never called.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& o) noexcept { *this = std::move(o); }
    Subscription& operator=(Subscription&& o) noexcept {
      reset();
      shared_ = std::move(o.shared_);
      id_ = o.id_;
      return *this;
    }
    ~Subscription() { reset(); }
    void reset() {
      if (!shared_) return;
      std::lock_guard<std::recursive_mutex> lk(shared_->mu);
      auto& l = shared_->list;
      for (auto it = l.begin(); it != l.end(); ++it)
        if (it->first == id_) {
          l.erase(it);
          break;
        }
      shared_.reset();
    }

   private:
    friend class ModelListeners;
    std::shared_ptr<Shared> shared_;
    std::uint64_t id_ = 0;
  };

  Subscription subscribe(ModelListener listener) {
    std::lock_guard<std::recursive_mutex> lk(shared_->mu);
    Subscription s;
    s.shared_ = shared_;
    s.id_ = shared_->next++;
    shared_->list.emplace_back(s.id_, std::move(listener));
    return s;
  }

  // Calls every listener subscribed now, in subscription order, on this
  // thread; one that unsubscribes meanwhile is skipped.
  void notify(const std::shared_ptr<const LoadedModel>& model) {
    std::lock_guard<std::recursive_mutex> lk(shared_->mu);
    const auto calls = shared_->list;
    for (const auto& [id, listener] : calls) {
      const auto& now = shared_->list;
      const bool still =
          std::any_of(now.begin(), now.end(), [id = id](const auto& e) { return e.first == id; });
      if (still) listener(model);
    }
  }

 private:
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace torchinfer
