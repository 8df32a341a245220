#include "batching/batcher.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "common/error.h"

namespace torchinfer {
namespace {

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::size_t bytes_for(const LoadedModel& m, int batch) {
  return m.slot_bytes * static_cast<std::size_t>(batch);
}

// The batch's forward() on its lane into common (its output, or the error
// that ended it, and its time); returns when it ended.
std::chrono::steady_clock::time_point run_forward(const LoadedModel& lane, const std::uint8_t* data,
                                                  int n, FrameResult& common) {
  const auto forward_start = std::chrono::steady_clock::now();
  try {
    common.output = lane.run(data, n);
  } catch (const std::exception& e) {
    common.error = e.what();
  } catch (...) {
    common.error = "unknown error in forward()";
  }
  const auto end = std::chrono::steady_clock::now();
  common.inference_ms = ms_between(forward_start, end);
  return end;
}

}  // namespace

namespace {

BatcherOptions kept_buffers(BatcherOptions o, int lanes) {
  if (o.batch_size >= 1)
    o.buffers = std::min(o.buffers, std::max(lanes + 1, kMaxQueuedSlots / o.batch_size));
  return o;
}

int lanes_of(const std::shared_ptr<const LoadedModel>& m) {
  return m ? m->lane_count() : 1;
}

}  // namespace

Batcher::Batcher(std::shared_ptr<const LoadedModel> model, BatcherOptions options)
    : lanes_(lanes_of(model)), opts_(kept_buffers(options, lanes_)), model_(std::move(model)) {
  if (opts_.batch_size < 1) throw Error(ErrorKind::kInvalidArgument, "batch size must be >= 1");
  if (opts_.buffers < 1) throw Error(ErrorKind::kInvalidArgument, "need at least one buffer");
  if (opts_.queue_budget.count() < 0)
    throw Error(ErrorKind::kInvalidArgument, "queue budget must be >= 0");
  if (!model_ || !model_->run || model_->slot_bytes == 0)
    throw Error(ErrorKind::kInvalidArgument, "batcher needs a runnable model");
  for (int i = 0; i < lanes_; ++i)
    if (!model_->lane(i).run)
      throw Error(ErrorKind::kInvalidArgument, "batcher needs a runnable model in every lane");
  batches_.resize(opts_.buffers);
  // A buffer first opened long after start (a third one behind two busy
  // lanes) must not allocate its bookkeeping on a streaming thread.
  for (Batch& b : batches_) {
    b.callbacks.reserve(opts_.batch_size);
    b.prepares.reserve(opts_.batch_size);
    b.keeps.reserve(opts_.batch_size);
    b.commit_times.reserve(opts_.batch_size);
  }
  closed_.reserve(opts_.buffers);
  lane_epoch_.assign(lanes_, -1);
  std::lock_guard<std::mutex> lk(mu_);
  start_workers_locked();
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  for (std::future<void>& f : posted_) f.wait();
  for (std::thread& t : threads_) t.join();
}

void Batcher::start_workers_locked() {
  for (int i = 0; i < lanes_; ++i) {
    const LoadedModel& lane = model_->lane(i);
    auto loop = [this, i, epoch = epoch_] { worker(i, epoch); };
    if (lane.post)
      posted_.push_back(lane.post(loop));
    else
      threads_.emplace_back(loop);
  }
}

std::shared_ptr<const LoadedModel> Batcher::model() const {
  std::lock_guard<std::mutex> lk(mu_);
  return model_;
}

bool Batcher::may_open_locked() const {
  // One buffer per lane running and one filling or waiting, as always;
  // beyond that only while the queued batches fit the budget.
  int in_use = 0;
  for (const Batch& b : batches_) in_use += b.state != State::kFree;
  if (in_use <= lanes_) return true;
  // A model without a measured batch time (0) queues no further.
  if (model_->batch_ms <= 0) return false;
  const double budget_ms = std::chrono::duration<double, std::milli>(opts_.queue_budget).count();
  // The load-time figure is an estimate (forward() alone, scaled from at
  // most 8 frames); once full batches ran, their own time (preprocessing on
  // the batch included, under today's load) says what a batch really takes.
  const double batch_ms = ran_batch_ms_ > 0 ? ran_batch_ms_ : model_->batch_ms;
  // The lanes take queued batches in turn: q behind them wait q / lanes
  // batch times.
  return static_cast<double>(closed_.size()) * batch_ms / lanes_ <= budget_ms;
}

int Batcher::open_batch_locked() {
  if (!may_open_locked()) return -1;
  for (int i = 0; i < static_cast<int>(batches_.size()); ++i) {
    Batch& b = batches_[i];
    if (b.state != State::kFree) continue;
    const std::size_t need = bytes_for(*model_, opts_.batch_size);
    if (b.memory.bytes() < need) {
      // Untouched, then zeroed by the inference threads: the pages land on
      // their NUMA node. Only happens for the first batches and on reload.
      b.memory = AlignedBuffer(need, AlignedBuffer::Init::kNone);
      if (model_->first_touch)
        model_->first_touch(b.memory.data(), b.memory.bytes());
      else
        std::memset(b.memory.data(), 0, b.memory.bytes());
    }
    b.state = State::kFilling;
    b.model = model_;
    b.epoch = epoch_;
    b.reserved = b.committed = 0;
    b.callbacks.assign(opts_.batch_size, nullptr);
    b.prepares.assign(opts_.batch_size, nullptr);
    b.keeps.assign(opts_.batch_size, nullptr);
    b.commit_times.assign(opts_.batch_size, {});
    filling_ = i;
    return i;
  }
  return -1;
}

void Batcher::close_filling_locked() {
  if (filling_ < 0) return;
  Batch& b = batches_[filling_];
  if (b.reserved == 0) return;
  b.state = State::kClosed;
  closed_.push_back(filling_);
  filling_ = -1;
  work_cv_.notify_all();
}

Batcher::Slot Batcher::acquire(bool block, const std::atomic<bool>& cancelled) {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (stop_ || cancelled.load()) return {};
    // A reloaded model starts with a fresh batch: one forward() runs one model.
    if (filling_ >= 0 && batches_[filling_].model != model_) {
      if (batches_[filling_].reserved > 0) {
        close_filling_locked();
      } else {
        batches_[filling_].state = State::kFree;
        filling_ = -1;
      }
    }
    int f = filling_ >= 0 ? filling_ : open_batch_locked();
    if (f >= 0) {
      Batch& b = batches_[f];
      Slot s;
      s.buffer = f;
      s.index = b.reserved++;
      s.model = b.model;
      s.data = b.memory.data<std::uint8_t>() + s.index * b.model->slot_bytes;
      if (s.index == 0) {
        b.opened = std::chrono::steady_clock::now();
        work_cv_.notify_all();  // the worker starts timing this batch
      }
      if (b.reserved == opts_.batch_size) close_filling_locked();
      return s;
    }
    if (!block) return {};
    space_cv_.wait(lk);
  }
}

void Batcher::commit(Slot& slot, FrameCallback done, SlotPrepare prepare,
                     std::shared_ptr<const void> keep) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    Batch& b = batches_[slot.buffer];
    b.callbacks[slot.index] = std::move(done);
    b.prepares[slot.index] = std::move(prepare);
    b.keeps[slot.index] = std::move(keep);
    b.commit_times[slot.index] = std::chrono::steady_clock::now();
    b.committed++;
  }
  work_cv_.notify_all();
  slot = Slot{};
}

void Batcher::submit_partial() {
  std::lock_guard<std::mutex> lk(mu_);
  close_filling_locked();
}

void Batcher::wake() {
  std::lock_guard<std::mutex> lk(mu_);
  space_cv_.notify_all();
}

void Batcher::replace_model(std::shared_ptr<const LoadedModel> model) {
  if (!model || !model->run)
    throw Error(ErrorKind::kInvalidArgument, "batcher needs a runnable model");
  if (model->lane_count() != lanes_)
    throw Error(ErrorKind::kInvalidArgument, "a reloaded model must have the " +
                                                 std::to_string(lanes_) +
                                                 " lanes of the one it replaces");
  std::shared_ptr<const LoadedModel> old = model;
  {
    std::lock_guard<std::mutex> lk(mu_);
    model_.swap(old);
    ++epoch_;
    ran_batch_ms_ = 0;
    // Frames already in the filling batch were preprocessed for the old model.
    close_filling_locked();
    start_workers_locked();
  }
  work_cv_.notify_all();  // the old workers end once their batches ran
  // Unlocked: if this was the last reference, each old lane is freed on its
  // own thread, after its worker (which needs the lock to end) returned.
  old.reset();
  listeners_.notify(model);
}

void Batcher::worker(int lane, int epoch) {
  RunScratch run;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const int b = closed_.empty() ? -1 : closed_.front();
    // Batches run in fill order, an old model's before a new one's.
    const int front = b < 0 ? epoch_ + 1 : batches_[b].epoch;
    if (front == epoch) {
      // Its frames all in, and this lane's cores free of an older model's batch.
      if (batches_[b].committed == batches_[b].reserved && lane_epoch_[lane] < 0) {
        closed_.erase(closed_.begin());
        space_cv_.notify_all();  // one batch less queued: may_open_locked() may now allow one
        run_batch(lk, b, lane, run);
      } else {
        work_cv_.wait(lk);
      }
    } else if (front > epoch && epoch != epoch_) {
      return;  // replaced, and none of this model's batches is left
    } else if (front < epoch || b >= 0) {
      work_cv_.wait(lk);  // an older model's workers run it first
    } else if (filling_ >= 0 && batches_[filling_].reserved > 0) {
      const auto deadline = batches_[filling_].opened + opts_.timeout;
      if (std::chrono::steady_clock::now() >= deadline)
        close_filling_locked();
      else
        work_cv_.wait_until(lk, deadline);
    } else {
      work_cv_.wait(lk);
    }
  }
}

void Batcher::run_batch(std::unique_lock<std::mutex>& lk, int index, int lane_index,
                        RunScratch& run) {
  Batch& b = batches_[index];
  b.state = State::kRunning;
  const int epoch = b.epoch;
  lane_epoch_[lane_index] = epoch;
  const int n = b.reserved;
  std::shared_ptr<const LoadedModel> model = b.model;
  const LoadedModel& lane = model->lane(lane_index);
  auto* data = b.memory.data<std::uint8_t>();
  // Swapped, not moved: the batch keeps the emptied vectors' capacity, so
  // neither running nor refilling it allocates.
  run.prepares.swap(b.prepares);
  const auto start = std::chrono::steady_clock::now();
  lk.unlock();

  prepare_batch(*model, lane, data, run);
  FrameResult common;
  common.model = model;
  common.batch_fill = n;
  common.lane = lane_index;
  const auto end = run_forward(lane, data, n, common);

  lk.lock();
  release_batch_locked(b, common, start, end, run);
  lk.unlock();

  deliver(run, common, n, start);
  // Callbacks and what they point into may own stream state, and the model
  // may be a replaced one whose last reference this is: released unlocked
  // (freeing a lane waits for its worker, which needs the lock to end).
  run.callbacks.clear();
  run.keeps.clear();
  common = FrameResult{};
  model.reset();
  lk.lock();
  // The lane is free once its results are out: across a reload a lane's
  // results still leave in fill order.
  lane_epoch_[lane_index] = -1;
  if (epoch != epoch_) work_cv_.notify_all();  // a newer model's worker may wait for this lane
}

void Batcher::release_batch_locked(Batch& b, const FrameResult& common,
                                   std::chrono::steady_clock::time_point start,
                                   std::chrono::steady_clock::time_point end, RunScratch& run) {
  const int n = common.batch_fill;
  if (n == opts_.batch_size && common.error.empty() && common.model == model_) {
    // A moving average over the last few full batches: one slow batch
    // (a page fault, a preempted thread) does not stop the queueing.
    const double took = ms_between(start, end);
    ran_batch_ms_ = ran_batch_ms_ > 0 ? 0.8 * ran_batch_ms_ + 0.2 * took : took;
  }
  run.callbacks.swap(b.callbacks);
  run.keeps.swap(b.keeps);
  run.commits.swap(b.commit_times);
  b.state = State::kFree;
  b.model.reset();
  b.reserved = b.committed = 0;
  space_cv_.notify_all();
}

void Batcher::deliver(RunScratch& run, const FrameResult& common, int n,
                      std::chrono::steady_clock::time_point start) {
  const bool prepared = !run.prepare_ms.empty();
  for (int k = 0; k < n; ++k) {
    if (!run.callbacks[k]) continue;
    FrameResult r = common;
    r.index = k;
    r.queue_ms = ms_between(run.commits[k], start);
    if (prepared) {
      r.prepare_ms = run.prepare_ms[k];
      if (!run.errors[k].empty()) {
        r.output.reset();
        r.error = "could not prepare a frame: " + run.errors[k];
      }
    }
    run.callbacks[k](std::move(r));
  }
}

void Batcher::prepare_batch(const LoadedModel& model, const LoadedModel& lane, std::uint8_t* data,
                            RunScratch& s) {
  const int n = static_cast<int>(s.prepares.size());
  s.slots.clear();  // the slots that left their preprocessing to the batch
  s.errors.clear();
  s.prepare_ms.clear();
  for (int k = 0; k < n; ++k)
    if (s.prepares[k]) s.slots.push_back(k);
  if (s.slots.empty()) {
    s.prepares.clear();
    return;
  }
  s.errors.resize(n);
  s.prepare_ms.assign(n, 0.0);
  // Fewer frames than threads: each frame is split into row bands so that
  // every thread has a share (a batch of one still uses the whole team).
  const int threads = lane.parallel_for ? std::max(1, lane.threads) : 1;
  const int frames = static_cast<int>(s.slots.size());
  const int bands = frames >= threads ? 1 : (threads + frames - 1) / frames;
  const int items = frames * bands;
  s.band_errors.clear();
  s.band_errors.resize(items);
  s.band_ms.assign(items, 0.0);
  struct Job {
    RunScratch& s;
    const LoadedModel& model;
    std::uint8_t* data;
    int bands;
    void run(int i, int worker) {
      const int k = s.slots[i / bands];
      const auto t0 = std::chrono::steady_clock::now();
      try {
        s.band_errors[i] =
            s.prepares[k](data + k * model.slot_bytes, model, worker, i % bands, bands);
      } catch (const std::exception& e) {
        s.band_errors[i] = e.what();
      } catch (...) {
        s.band_errors[i] = "unknown error";
      }
      s.band_ms[i] = ms_between(t0, std::chrono::steady_clock::now());
    }
  } job{s, model, data, bands};
  // One pointer and an int: small enough for std::function to hold without
  // allocating.
  Job* j = &job;
  const int base = lane.worker_base;
  if (lane.parallel_for && items > 1) {
    lane.parallel_for(items, [j, base](int i, int worker) { j->run(i, base + worker); });
  } else {
    for (int i = 0; i < items; ++i) j->run(i, base);
  }
  for (int i = 0; i < items; ++i) {
    const int k = s.slots[i / bands];
    s.prepare_ms[k] += s.band_ms[i];
    if (s.errors[k].empty()) s.errors[k].swap(s.band_errors[i]);
  }
  // The frames' pixels (held by the closures) are released before any
  // result goes out: the frames may leave as soon as their results do.
  s.prepares.clear();
}

}  // namespace torchinfer
