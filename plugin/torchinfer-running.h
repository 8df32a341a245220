// The model a torchinfer element runs, from start to stop: its one handle
// to the (possibly shared) Batcher, its subscription to the batcher's
// reloads (whichever sharer started them), and the reload it started itself,
// on a thread of its own so that loading never stalls the stream.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "batching/batcher.h"

namespace torchinfer::gst {

class RunningModel {
 public:
  RunningModel() = default;
  ~RunningModel() { stop(); }
  RunningModel(const RunningModel&) = delete;
  RunningModel& operator=(const RunningModel&) = delete;

  // Holds `batcher` and calls on_reload(model) after each reload of it, on
  // the reloading thread, until stop(); once now too, with the model
  // running (a reload may have come between the batcher's acquisition and
  // this call: on_reload must ignore a model it already has).
  void start(std::shared_ptr<Batcher> batcher, ModelListener on_reload);
  // Waits for a reload in progress, ends the subscription (waiting for a
  // call in progress on another sharer's thread) and lets the batcher go.
  void stop();
  // The file that runs now; nothing when stopped.
  std::optional<std::string> file() const;
  // Runs reload(batcher) on the handle's thread, after the previous reload
  // (one at a time); false when stopped.
  bool reload(std::function<void(Batcher&)> reload);

 private:
  // Guards batcher_ and subscription_; never held while calling out.
  mutable std::mutex mu_;
  std::shared_ptr<Batcher> batcher_;
  ModelListeners::Subscription subscription_;
  // Guards thread_: reload() and stop() wait for it under this lock (the
  // reload's thread never takes it).
  std::mutex thread_mu_;
  std::thread thread_;
};

}  // namespace torchinfer::gst
