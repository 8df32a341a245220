// Collects preprocessed frames from one or more streams into batch buffers
// and runs the model once per batch on its own worker thread (one per lane).
//
// Frames are written in place: acquire() hands out slot k of the filling
// batch, the caller preprocesses straight into it and commit()s it with a
// callback. A batch runs when it is full, when its oldest frame has waited
// `timeout`, or when a caller asks (EOS, caps change). Batches run in the
// order they were filled, so each stream's results come back in its order.
// While one batch runs the next one fills; more batches may queue behind
// it while the wait they add stays within `queue_budget` (see
// BatcherOptions), so that frames of many cameras arriving together queue
// instead of being skipped while the cores could still serve them. Beyond
// that acquire() blocks (back-pressure) or, non-blocking, fails (the
// caller's drop policy decides).
//
// A model with K lanes (LoadedModel::more_lanes) gets K workers, worker i
// running lane i: K batches run at once, each on its own cores. They start
// in fill order but may finish out of it; each stream's InOrderQueue puts
// its results back in order.
//
// Threads. A lane's worker is the lane's own thread (LoadedModel::post:
// the engine's thread, which loaded the lane and frees it), so a forward()
// needs no hand-off and no second OpenMP team exists for the lane. A lane
// without `post` (a test runner) gets a thread of the batcher's. A reload
// starts the new model's workers on the new lanes' threads; the old ones
// run the old model's batches still queued and end. Batches carry the
// epoch of the model they were filled for; a worker runs its epoch's only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batching/model_listeners.h"
#include "common/aligned_buffer.h"
#include "model/loaded_model.h"

namespace torchinfer {

struct FrameResult {
  std::shared_ptr<const BatchOutput> output;  // null when error is set
  std::shared_ptr<const LoadedModel> model;   // the model that produced it
  int index = 0;                              // this frame's slot in the batch
  int batch_fill = 0;                         // frames in the batch that ran
  double queue_ms = 0;                        // commit -> batch start
  double prepare_ms = 0;                      // this slot's SlotPrepare calls, summed
  double inference_ms = 0;                    // the batch's forward()
  int lane = 0;                               // which of the model's lanes ran it
  std::string error;
};

// Called on the worker thread, without the batcher's lock; must not block.
using FrameCallback = std::function<void(FrameResult&&)>;

// Preprocessing a stream leaves to the batch: called just before the
// batch's forward() on the inference threads of the lane that runs it
// (LoadedModel::parallel_for), so that it never competes with them for the
// cores. A slot is split into `bands` row bands when the batch has fewer
// slots than the lane has threads; each call writes band `band` of the slot
// at `dst`. `worker` (0..LoadedModel::total_threads() - 1) is unique among
// the calls running at the same moment, across lanes. `model` is lane 0.
// Returns "" or why the frame could not be prepared (its FrameCallback then
// gets that error). Must not throw.
using SlotPrepare = std::function<std::string(void* dst, const LoadedModel& model, int worker,
                                              int band, int bands)>;

// Frames the batch buffers may hold in all when more than two buffers are
// used (options().buffers says what a batcher kept).
constexpr int kMaxQueuedSlots = 32;

struct BatcherOptions {
  int batch_size = 1;
  std::chrono::microseconds timeout{40000};
  // Batch buffers at most (allocated when first needed). The batcher keeps
  // fewer when batches are large: no more than kMaxQueuedSlots frames in
  // all beyond lanes + 1 buffers, since every stream's queue and the
  // upstream buffer pool are sized for what the buffers can hold. At batch
  // 1 and 2 the queue budget, not the buffers, bounds the queue: with 8
  // buffers a burst of 8 cameras behind two busy lanes had 2 frames
  // skipped every period while the lanes then sat idle (issue 37).
  int buffers = kMaxQueuedSlots;
  // A new batch may open when at most one buffer per lane is in use (one
  // running per lane, one filling), or behind q closed ones waiting to run
  // when q / lanes x the batch time is within this budget: a model slower
  // than its sources still skips frames at once rather than building a
  // standing queue, a fast one absorbs bursts from many cameras. The batch
  // time is the moving average of the full batches that ran (preprocessing
  // on the batch included), or before any ran the model's estimate
  // (LoadedModel::batch_ms; 0 = not measured: no queueing).
  std::chrono::microseconds queue_budget{40000};
};

class Batcher {
 public:
  struct Slot {
    void* data = nullptr;
    std::shared_ptr<const LoadedModel> model;  // preprocess for this model
    int buffer = -1;
    int index = -1;
    explicit operator bool() const { return data != nullptr; }
  };

  Batcher(std::shared_ptr<const LoadedModel> model, BatcherOptions options);
  // Stops the workers after the batches in flight; queued frames are
  // dropped without their callbacks being called.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Reserves the next slot. With block, waits while every buffer is busy;
  // returns an empty Slot if `cancelled` becomes true (checked on wake()).
  Slot acquire(bool block, const std::atomic<bool>& cancelled);
  // The slot holds the frame now (or will, once `prepare` ran: see
  // SlotPrepare); done(result) is called once the batch ran. A null
  // callback discards the frame's result (e.g. preprocessing failed).
  // `keep` stays referenced until done() returned (or the batch is dropped),
  // so callbacks may point into it instead of owning copies.
  void commit(Slot& slot, FrameCallback done, SlotPrepare prepare = nullptr,
              std::shared_ptr<const void> keep = nullptr);
  // Runs the filling batch now, however full.
  void submit_partial();
  // Wakes acquire() calls so that they re-check their cancel flag.
  void wake();
  // Takes effect from the next batch; the filling one runs with the old
  // model. Throws Error(kInvalidArgument) for a model with another number
  // of lanes (a reload uses the same settings, so it never has).
  // Then tells the subscribers (subscribe()), on this thread.
  void replace_model(std::shared_ptr<const LoadedModel> model);
  // `listener` is called with the new model after each replace_model(), on
  // the reloading thread and outside the batcher's lock (through
  // ModelRegistry::reload, under the id's lock: it must not acquire that
  // id), until the returned subscription ends.
  ModelListeners::Subscription subscribe(ModelListener listener) {
    return listeners_.subscribe(std::move(listener));
  }
  // Batches that may run at once: the model's lanes.
  int lanes() const { return lanes_; }

  std::shared_ptr<const LoadedModel> model() const;
  const BatcherOptions& options() const { return opts_; }

 private:
  enum class State { kFree, kFilling, kClosed, kRunning };
  struct Batch {
    State state = State::kFree;
    AlignedBuffer memory;
    std::shared_ptr<const LoadedModel> model;
    int epoch = 0;  // of `model`: which workers may run it
    int reserved = 0, committed = 0;
    std::chrono::steady_clock::time_point opened;
    std::vector<FrameCallback> callbacks;
    std::vector<SlotPrepare> prepares;
    std::vector<std::shared_ptr<const void>> keeps;
    std::vector<std::chrono::steady_clock::time_point> commit_times;
  };

  bool may_open_locked() const;
  int open_batch_locked();
  void close_filling_locked();
  // One worker per lane of model_, as epoch `epoch_`.
  void start_workers_locked();
  struct RunScratch;
  void worker(int lane, int epoch);
  void run_batch(std::unique_lock<std::mutex>& lk, int b, int lane, RunScratch& run);
  // The ran batch b back to free (its callbacks and commit times moved to
  // run) and the running-time average updated from a full batch.
  void release_batch_locked(Batch& b, const FrameResult& common,
                            std::chrono::steady_clock::time_point start,
                            std::chrono::steady_clock::time_point end, RunScratch& run);
  // Each frame's result to its callback, unlocked.
  static void deliver(RunScratch& run, const FrameResult& common, int n,
                      std::chrono::steady_clock::time_point start);
  // Runs run.prepares (the batch's deferred preprocessing) on `lane`'s
  // threads; fills run.errors and run.prepare_ms per slot (empty when none
  // was deferred).
  void prepare_batch(const LoadedModel& model, const LoadedModel& lane, std::uint8_t* data,
                     RunScratch& run);

  // One worker's bookkeeping for the batch it runs, kept from batch to
  // batch (on the worker's stack) so that running one allocates nothing
  // once the vectors have grown.
  struct RunScratch {
    std::vector<FrameCallback> callbacks;
    std::vector<SlotPrepare> prepares;
    std::vector<std::shared_ptr<const void>> keeps;
    std::vector<std::chrono::steady_clock::time_point> commits;
    std::vector<int> slots;
    std::vector<std::string> errors;  // per slot
    std::vector<double> prepare_ms;   // per slot
    std::vector<std::string> band_errors;
    std::vector<double> band_ms;
  };

  const int lanes_;
  const BatcherOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // worker: a batch closed, committed or timed out
  std::condition_variable space_cv_;  // acquire(): a buffer freed, or wake()
  std::vector<Batch> batches_;
  int filling_ = -1;
  std::vector<int> closed_;  // in fill order; at most `buffers` (reserved: never reallocates)
  double ran_batch_ms_ = 0;  // moving average of full batches run (0 = none yet)
  std::shared_ptr<const LoadedModel> model_;
  int epoch_ = 0;  // +1 per replace_model()
  // Per lane: the epoch of the batch it runs (until its results are out),
  // -1 when idle. Across a reload a lane runs one batch at a time, the old
  // model's first, and its results leave in fill order.
  std::vector<int> lane_epoch_;
  bool stop_ = false;
  std::vector<std::future<void>> posted_;  // workers on the lanes' own threads
  std::vector<std::thread> threads_;       // workers of lanes without `post`
  ModelListeners listeners_;
};

}  // namespace torchinfer
