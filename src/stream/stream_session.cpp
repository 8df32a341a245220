#include "stream/stream_session.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace torchinfer {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// One Preprocessor per inference thread (SlotPrepare's worker): a batch
// prepares its slots on several threads at once, and a Preprocessor keeps
// per-geometry scratch. An entry is only touched by its worker, and one
// batch of a batcher runs at a time.
class StreamSession::TeamPreprocessors {
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

// A frame's results plus what its slots need until their batches ran.
// Batch callbacks hold a raw pointer (so that std::function stores them
// without allocating) and the batch holds the record itself; records are
// pooled and reused once nothing holds them, so a frame allocates nothing.
struct StreamSession::Record : FrameInference {
  std::shared_ptr<Queue> queue;  // where the slots' results go
  std::uint64_t seq = 0;         // the frame's entry in it
  // preprocess_in_batch: the inference threads' preprocessors, the frame,
  // mapped until every slot it gave a batch was delivered or given up, and
  // each slot's crop (width 0: the options' own).
  std::shared_ptr<TeamPreprocessors> team;
  std::unique_ptr<FramePixels> pixels;
  FrameView view;
  std::vector<Crop> crops;
  std::atomic<int> holds{0};  // slots not yet delivered or given up

  ~Record() { unmap(); }
  void unmap() {
    if (!pixels) return;
    pixels->unmap();
    pixels.reset();
  }
  // `n` slots are done with the pixels; the last one unmaps them, before
  // its result can let the frame leave.
  void release(int n) {
    if (n > 0 && holds.fetch_sub(n) == n) unmap();
  }
  void clear() {
    frame_width = frame_height = 0;
    pts = kNoTimestamp;
    slots.clear();
    region_mode = false;
    regions.clear();
    unmap();
    crops.clear();
    holds = 0;
  }
};

bool FrameInference::ok() const {
  bool ran = false;
  for (const SlotResult& s : slots) {
    if (!s.delivered) continue;
    if (!s.result.error.empty()) return false;
    ran = true;
  }
  return ran;
}

std::string FrameInference::error() const {
  for (const SlotResult& s : slots)
    if (s.delivered && !s.result.error.empty()) return s.result.error;
  return {};
}

StreamSession::StreamSession() : queue_(std::make_shared<Queue>(8)) {}

StreamSession::~StreamSession() {
  stop();
}

void StreamSession::start(std::shared_ptr<Batcher> batcher, SessionOptions options) {
  const std::size_t in_batches =
      static_cast<std::size_t>(batcher->options().buffers) * batcher->options().batch_size;
  queue_->set_capacity(in_batches * options.inference_interval + 8);
  opts_ = std::move(options);
  batcher_ = std::move(batcher);
  team_pre_.reset();
  if (opts_.preprocess_in_batch)
    team_pre_ = std::make_shared<TeamPreprocessors>(
        opts_.preprocess_for, std::max(1, batcher_->model()->total_threads()));
  pre_.reset();
  pre_model_.reset();
  frame_counter_ = 0;
  last_.reset();
  // Every queued frame, the latest result kept for reuse and the one the
  // output thread is attaching: with a few spare, the pool never grows.
  // Made here, not on demand: a batch worker that still holds a delivered
  // frame's record (several with lanes) must not make a frame allocate.
  records_.clear();
  records_.reserve(queue_->capacity() + 4);
  while (records_.size() < records_.capacity()) records_.push_back(std::make_shared<Record>());
  next_record_ = 0;
  const std::uint64_t forget =
      object_forget_frames(opts_.regions.reclassify_interval, opts_.inference_interval);
  submitted_ = ObjectMemory<std::uint64_t>(forget, kMaxRememberedObjects);
  results_ = ObjectMemory<CachedResult>(forget, kMaxRememberedObjects);
  out_frames_ = 0;
  last_stats_ = Clock::now();
  output_code_ = 0;
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = StreamStats{};
  stats_.set_region_mode(opts_.region_mode);
  last_inference_ms_ = 0;
  frames_inferred_ = 0;
}

void StreamSession::stop() {
  queue_->set_flushing(true);
  batcher_.reset();
  team_pre_.reset();
  // Records of batches the batcher dropped may still hold their frames.
  records_.clear();
  pre_.reset();
  pre_model_.reset();
  last_.reset();
}

std::shared_ptr<Batcher> StreamSession::batcher() const {
  return batcher_;
}

void StreamSession::give_up_slot(std::uint64_t seq, std::size_t slot) {
  queue_->complete(seq, [slot](Item& it) {
    it.rec->slots[slot].delivered = false;
    return --it.pending == 0;
  });
}

std::shared_ptr<StreamSession::Record> StreamSession::new_record() {
  // Frames leave in order, so the oldest record is the likeliest free one.
  for (std::size_t tries = 0; tries < std::min<std::size_t>(records_.size(), 4); ++tries) {
    std::shared_ptr<Record>& r = records_[next_record_];
    next_record_ = (next_record_ + 1) % records_.size();
    if (r.use_count() == 1) {
      // The last other holder let go on another thread: see its writes.
      std::atomic_thread_fence(std::memory_order_acquire);
      r->clear();
      return r;
    }
  }
  auto r = std::make_shared<Record>();
  if (records_.size() < records_.capacity()) records_.push_back(r);
  return r;
}

void StreamSession::prepare(const Batcher::Slot& slot) {
  if (slot.model != pre_model_) {
    pre_ = std::make_unique<Preprocessor>(opts_.preprocess_for(slot.model->config));
    pre_model_ = slot.model;
  }
}

// Whole frame (crop = nullptr) or one region into the slot, for the slot's
// model (a reload may have changed its input size).
FrameTransform StreamSession::preprocess_into(const Batcher::Slot& slot, const FrameView& view,
                                              const Crop* crop, double& ms) {
  prepare(slot);
  const auto t0 = Clock::now();
  FrameTransform tf;
  if (slot.model->config.input_uint8) {
    auto* dst = static_cast<std::uint8_t*>(slot.data);
    tf = crop ? pre_->run(view, *crop, dst) : pre_->run(view, dst);
  } else {
    auto* dst = static_cast<float*>(slot.data);
    tf = crop ? pre_->run(view, *crop, dst) : pre_->run(view, dst);
  }
  ms = ms_since(t0);
  return tf;
}

SubmitResult StreamSession::fill_slot(const std::shared_ptr<Record>& rec, Batcher::Slot& slot,
                                      std::unique_ptr<FramePixels> pixels) {
  FrameView view;
  if (!pixels->map(&view)) {
    batcher_->commit(slot, nullptr);
    give_up_slot(rec->seq, 0);
    return {SubmitStatus::kMapFailed, {}};
  }
  if (opts_.preprocess_in_batch) {
    // A frame the preprocessing would refuse fails here, on its own thread.
    try {
      prepare(slot);
      pre_->check(view, nullptr);
    } catch (const std::exception& e) {
      pixels->unmap();
      batcher_->commit(slot, nullptr);
      give_up_slot(rec->seq, 0);
      return {SubmitStatus::kPrepareFailed, e.what()};
    }
    rec->pixels = std::move(pixels);
    rec->view = view;
    rec->crops.assign(1, Crop{});
    rec->holds = 1;
    commit_deferred(slot, rec, 0);
    return {SubmitStatus::kQueued, {}};
  }
  SlotResult& s = rec->slots[0];
  try {
    s.transform = preprocess_into(slot, view, nullptr, s.preprocess_ms);
  } catch (const std::exception& e) {
    pixels->unmap();
    batcher_->commit(slot, nullptr);
    give_up_slot(rec->seq, 0);
    return {SubmitStatus::kPrepareFailed, e.what()};
  }
  pixels->unmap();
  commit_slot(slot, rec, 0);
  return {SubmitStatus::kQueued, {}};
}

// The result lands in its frame's slot; the frame leaves once its last slot
// has delivered. The slot's transform and preprocessing time were written
// before the commit, which orders them before the output thread's read.
void StreamSession::commit_slot(Batcher::Slot& slot, const std::shared_ptr<Record>& rec,
                                std::size_t index) {
  Record* r = rec.get();
  batcher_->commit(
      slot,
      [r, index](FrameResult&& res) {
        r->queue->complete(r->seq, [&](Item& it) {
          SlotResult& s = it.rec->slots[index];
          s.result = std::move(res);
          s.delivered = true;
          return --it.pending == 0;
        });
      },
      nullptr, rec);
}

void StreamSession::commit_deferred(Batcher::Slot& slot, const std::shared_ptr<Record>& rec,
                                    std::size_t index) {
  Record* r = rec.get();
  // The batch's worker writes the transform (band 0) before forward() and
  // the result after it: the output thread reads both once the slot
  // completes.
  auto prepare = [r, index](void* dst, const LoadedModel& model, int worker, int band,
                            int bands) -> std::string {
    std::unique_ptr<Preprocessor> spare;
    Preprocessor& pre = r->team->get(model, worker, spare);
    const Crop& crop = r->crops[index];
    const FrameTransform tf =
        pre.run_band(r->view, crop.width > 0 ? &crop : nullptr, dst, band, bands);
    if (band == 0) r->slots[index].transform = tf;
    return {};
  };
  batcher_->commit(
      slot,
      [r, index](FrameResult&& res) {
        r->release(1);  // unmapped before the frame can leave
        r->queue->complete(r->seq, [&](Item& it) {
          SlotResult& s = it.rec->slots[index];
          s.preprocess_ms = res.prepare_ms;
          s.result = std::move(res);
          s.delivered = true;
          return --it.pending == 0;
        });
      },
      std::move(prepare), rec);
}

std::vector<std::size_t> StreamSession::plan_regions(FrameInference& rec, bool infer,
                                                     std::uint64_t frame_no,
                                                     const std::vector<RegionOfInterest>* regions) {
  std::vector<std::size_t> to_infer;
  rec.region_mode = true;
  if (!regions) return to_infer;
  const int every = std::max(1, opts_.regions.reclassify_interval);
  rec.regions.reserve(regions->size());
  for (const RegionOfInterest& roi : *regions) {
    RegionResult r = plan_region(roi, opts_.regions, rec.frame_width, rec.frame_height);
    if (r.fate == RegionFate::kInferred) {
      if (!infer) {
        r.fate = r.object_id ? RegionFate::kReuse : RegionFate::kNotInferred;
      } else if (r.object_id) {
        const std::uint64_t* last = submitted_.touch(*r.object_id, frame_no);
        if (last && frame_no - *last < static_cast<std::uint64_t>(every))
          r.fate = RegionFate::kReuse;
      }
    }
    if (r.fate == RegionFate::kInferred) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.emplace_back();
      to_infer.push_back(rec.regions.size());
    }
    rec.regions.push_back(r);
  }
  submitted_.forget_stale(frame_no);
  return to_infer;
}

SubmitResult StreamSession::fill_regions(const std::shared_ptr<Record>& rec,
                                         const std::vector<std::size_t>& to_infer,
                                         std::uint64_t frame_no,
                                         std::unique_ptr<FramePixels> owned) {
  const std::size_t n = to_infer.size();
  const bool skip_when_busy = skip_when_busy_;
  const bool deferred = opts_.preprocess_in_batch;
  FramePixels& pixels = *owned;
  FrameView view;
  bool mapped = false;  // by this thread (deferred: the record holds the mapping)
  bool held = false;    // deferred: the record holds the mapping for n slots
  // The frame may leave (and be written downstream) once its last slot is
  // committed or given up: unmap before that.
  auto give_up_from = [&](std::size_t k) {
    if (mapped) pixels.unmap();
    mapped = false;
    if (held) rec->release(static_cast<int>(n - k));
    for (std::size_t j = k; j < n; ++j)
      give_up_slot(rec->seq, static_cast<std::size_t>(rec->regions[to_infer[j]].slot));
  };
  for (std::size_t k = 0; k < n; ++k) {
    const RegionResult& region = rec->regions[to_infer[k]];
    const std::size_t index = static_cast<std::size_t>(region.slot);
    const Crop box = region.box;
    const std::optional<std::int64_t> object_id = region.object_id;
    // skip_when_busy drops whole frames: once a frame has its first slot,
    // its other regions wait for theirs (bounded by its region count).
    Batcher::Slot slot = batcher_->acquire(!skip_when_busy || k > 0, flushing_);
    if (!slot) {
      if (flushing_) {
        if (mapped) pixels.unmap();
        if (held) rec->release(static_cast<int>(n - k));
        return {SubmitStatus::kFlushing, {}};
      }
      give_up_from(k);
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.frame_dropped();
      return {SubmitStatus::kDropped, {}};
    }
    if (k == 0 && !(mapped = pixels.map(&view))) {
      batcher_->commit(slot, nullptr);
      give_up_from(k);
      return {SubmitStatus::kMapFailed, {}};
    }
    if (deferred) {
      if (k == 0) {
        mapped = false;  // from now on the record holds the mapping
        rec->pixels = std::move(owned);
        rec->view = view;
        rec->crops.resize(rec->slots.size());
        rec->holds = static_cast<int>(n);
        held = true;
      }
      try {
        prepare(slot);
        pre_->check(view, &box);
      } catch (const std::exception& e) {
        batcher_->commit(slot, nullptr);
        give_up_from(k);
        return {SubmitStatus::kPrepareFailed, e.what()};
      }
      rec->crops[index] = box;
      commit_deferred(slot, rec, index);
      if (object_id) submitted_.put(*object_id, frame_no, frame_no);
      continue;
    }
    SlotResult& s = rec->slots[index];
    try {
      s.transform = preprocess_into(slot, view, &box, s.preprocess_ms);
    } catch (const std::exception& e) {
      batcher_->commit(slot, nullptr);
      give_up_from(k);
      return {SubmitStatus::kPrepareFailed, e.what()};
    }
    if (k + 1 == n) {
      pixels.unmap();
      mapped = false;
    }
    commit_slot(slot, rec, index);
    if (object_id) submitted_.put(*object_id, frame_no, frame_no);
  }
  return {SubmitStatus::kQueued, {}};
}

SubmitResult StreamSession::submit_frame(OwnedRef frame, int width, int height, std::uint64_t pts,
                                         std::unique_ptr<FramePixels> pixels,
                                         const std::vector<RegionOfInterest>* regions) {
  if (flushing_) return {SubmitStatus::kFlushing, {}};
  if (output_code_ != 0) return {SubmitStatus::kStopped, {}};
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_in();
  }
  const std::uint64_t frame_no = frame_counter_++;
  const bool infer = frame_no % opts_.inference_interval == 0;
  const bool skip_when_busy = skip_when_busy_;

  Item item;
  item.obj = std::move(frame);
  item.in_time = Clock::now();
  item.rec = new_record();
  item.rec->queue = queue_;
  item.rec->team = team_pre_;
  item.rec->frame_width = width;
  item.rec->frame_height = height;
  item.rec->pts = pts;
  std::vector<std::size_t> to_infer;
  if (opts_.region_mode) {
    to_infer = plan_regions(*item.rec, infer, frame_no, regions);
    item.pending = static_cast<int>(to_infer.size());
  } else if (infer) {
    item.rec->slots.resize(1);
    item.pending = 1;
  }
  const std::shared_ptr<Record> rec = item.rec;
  const bool ready = item.pending == 0;
  // The frame's entry, for the slots' callbacks (committed after this).
  const std::optional<std::uint64_t> seq = queue_->push(std::move(item), ready, !skip_when_busy);
  if (seq) rec->seq = *seq;
  if (!seq) {
    if (flushing_) return {SubmitStatus::kFlushing, {}};
    if (output_code_ != 0) return {SubmitStatus::kStopped, {}};
    // Live and the queue is full: this frame leaves the stream.
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_dropped();
    return {SubmitStatus::kDropped, {}};
  }
  if (!infer) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_skipped();
    return {SubmitStatus::kSkipped, {}};
  }
  if (opts_.region_mode) {
    if (to_infer.empty()) {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.frame_without_regions();
      return {SubmitStatus::kNoRegions, {}};
    }
    return fill_regions(rec, to_infer, frame_no, std::move(pixels));
  }

  Batcher::Slot slot = batcher_->acquire(!skip_when_busy, flushing_);
  if (!slot) {
    if (flushing_) return {SubmitStatus::kFlushing, {}};
    give_up_slot(*seq, 0);
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_dropped();
    return {SubmitStatus::kDropped, {}};
  }
  return fill_slot(rec, slot, std::move(pixels));
}

bool StreamSession::push_event(OwnedRef event) {
  Item item;
  item.obj = std::move(event);
  item.is_event = true;
  return queue_->push(std::move(item), true, true).has_value();
}

void StreamSession::submit_partial() {
  if (batcher_) batcher_->submit_partial();
}

bool StreamSession::drain() {
  submit_partial();
  return queue_->wait_empty();
}

std::optional<StreamOutput> StreamSession::pop() {
  std::optional<Item> item = queue_->pop();
  if (!item) return std::nullopt;
  StreamOutput out;
  out.obj = std::move(item->obj);
  out.is_event = item->is_event;
  out.in_time = item->in_time;
  if (item->is_event) return out;
  std::shared_ptr<FrameInference> rec = std::move(item->rec);
  out.error = rec->error();
  if (!out.error.empty()) return out;
  if (rec->region_mode) {
    out.inferred = rec->ok();
    resolve_regions(*rec);
    out.results = std::move(rec);
    return out;
  }
  if (rec->ok()) {
    out.inferred = true;
    out.results = rec;
    last_ = std::move(rec);
  } else if (last_ && last_->frame_width == rec->frame_width &&
             last_->frame_height == rec->frame_height) {
    out.results = last_;
  }
  return out;
}

void StreamSession::resolve_regions(FrameInference& rec) {
  const std::uint64_t frame = ++out_frames_;
  for (RegionResult& r : rec.regions) {
    if (r.fate == RegionFate::kInferred && r.slot >= 0 && rec.slots[r.slot].delivered) {
      r.result_pts = rec.pts;
      if (r.object_id) results_.put(*r.object_id, frame, CachedResult{rec.slots[r.slot], rec.pts});
      continue;
    }
    if (!r.object_id) continue;
    CachedResult* c = results_.touch(*r.object_id, frame);
    // A region due for reuse, or one whose batch slot was dropped (busy).
    if (c && (r.fate == RegionFate::kReuse || r.fate == RegionFate::kInferred)) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.push_back(c->slot);
      r.reused = true;
      r.result_pts = c->pts;
    }
  }
  results_.forget_stale(frame);
}

void StreamSession::count_regions(const FrameInference& rec) {
  std::uint64_t inferred = 0, reused = 0, filtered = 0, skipped = 0, dropped = 0;
  bool first = true;
  for (const RegionResult& r : rec.regions) {
    switch (r.fate) {
      case RegionFate::kFiltered:
        ++filtered;
        break;
      case RegionFate::kOutside:
      case RegionFate::kTooSmall:
        ++skipped;
        break;
      case RegionFate::kInferred:
      case RegionFate::kReuse:
      case RegionFate::kNotInferred:
        if (r.reused) {
          ++reused;
        } else if (r.fate == RegionFate::kInferred) {
          const SlotResult& s = rec.slots[r.slot];
          if (!s.delivered) {
            ++dropped;
            break;
          }
          ++inferred;
          // Batch figures once per frame, so frames-inferred counts frames.
          if (first) {
            stats_.inferred(s.result.batch_fill, s.result.queue_ms, s.preprocess_ms,
                            s.result.inference_ms);
            first = false;
          }
          last_inference_ms_ = s.result.inference_ms;
        }
        break;
    }
  }
  stats_.regions(inferred, reused, filtered, skipped, dropped);
}

std::optional<StatsSnapshot> StreamSession::finish(const StreamOutput& out, bool valid) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(stats_mu_);
  if (out.results && out.results->region_mode) {
    count_regions(*out.results);
    if (out.inferred) {
      if (!valid) stats_.frame_invalid();
      ++frames_inferred_;
    }
  } else if (out.inferred) {
    for (const SlotResult& s : out.results->slots) {
      if (!s.delivered) continue;
      stats_.inferred(s.result.batch_fill, s.result.queue_ms, s.preprocess_ms,
                      s.result.inference_ms);
      last_inference_ms_ = s.result.inference_ms;
    }
    if (!valid) stats_.frame_invalid();
    ++frames_inferred_;
  }
  stats_.frame_out(now);
  stats_.latency(std::chrono::duration<double, std::milli>(now - out.in_time).count());
  if (opts_.stats_interval.count() > 0 && now - last_stats_ >= opts_.stats_interval) {
    last_stats_ = now;
    return stats_.snapshot(now, true);
  }
  return std::nullopt;
}

void StreamSession::set_flushing() {
  flushing_ = true;
  if (batcher_) batcher_->wake();
  queue_->set_flushing(true);
}

void StreamSession::resume() {
  queue_->set_flushing(false);
  last_.reset();
  // A seek starts afresh: no result from before it is reused.
  submitted_.clear();
  results_.clear();
  flushing_ = false;
  output_code_ = 0;
}

void StreamSession::stop_output(int code, bool discard_queue) {
  output_code_ = code;
  if (discard_queue) queue_->set_flushing(true);
}

void StreamSession::accept_again(int code) {
  output_code_.compare_exchange_strong(code, 0);
}

StatsSnapshot StreamSession::snapshot(bool reset_rate) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_.snapshot(Clock::now(), reset_rate);
}

std::uint64_t StreamSession::frames_inferred() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return frames_inferred_;
}

double StreamSession::last_inference_ms() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return last_inference_ms_;
}

}  // namespace torchinfer
