#include "torchinfer-running.h"

#include <utility>

namespace torchinfer::gst {

void RunningModel::start(std::shared_ptr<Batcher> batcher, ModelListener on_reload) {
  ModelListeners::Subscription sub = batcher->subscribe(on_reload);
  std::shared_ptr<const LoadedModel> now = batcher->model();
  {
    std::lock_guard<std::mutex> lock(mu_);
    batcher_ = std::move(batcher);
    subscription_ = std::move(sub);
  }
  on_reload(now);
}

void RunningModel::stop() {
  std::shared_ptr<Batcher> batcher;
  ModelListeners::Subscription sub;
  {
    // Held until the batcher is gone from here: a reload() meanwhile finds
    // the handle stopped rather than starting a thread nobody joins.
    std::lock_guard<std::mutex> lock(thread_mu_);
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> held(mu_);
    batcher = std::move(batcher_);
    sub = std::move(subscription_);
  }
  // Unlocked: the subscription's end waits for a listener running on
  // another sharer's thread, which may read file() or ask for a reload.
  sub.reset();
}

std::optional<std::string> RunningModel::file() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!batcher_) return std::nullopt;
  return batcher_->model()->path;
}

bool RunningModel::reload(std::function<void(Batcher&)> reload) {
  std::lock_guard<std::mutex> lock(thread_mu_);
  std::shared_ptr<Batcher> batcher;
  {
    std::lock_guard<std::mutex> held(mu_);
    batcher = batcher_;
  }
  if (!batcher) return false;
  // One reload at a time; a second request waits for the first.
  if (thread_.joinable()) thread_.join();
  thread_ =
      std::thread([batcher = std::move(batcher), reload = std::move(reload)] { reload(*batcher); });
  return true;
}

}  // namespace torchinfer::gst
