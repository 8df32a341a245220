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
  ThreadOwner::Scope in(in_owner_), out(out_owner_);
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
  // Every queued frame, the latest result kept for reuse and the one the
  // output thread is attaching: with a few spare, the pool never grows.
  records_.reset(queue_->capacity() + 4);
  forget_after_ = object_forget_frames(opts_.regions.reclassify_interval, opts_.inference_interval);
  in_streams_.clear();
  in_current_ = 0;
  in_next_ = 1;
  to_infer_.clear();
  out_streams_.clear();
  in_epoch_ = out_epoch_ = epoch_;
  last_stats_ = Clock::now();
  output_code_ = 0;
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = StreamStats{};
  stats_.set_region_mode(opts_.region_mode);
  // Queued frames, plus one counted in but not yet queued (submit_frame)
  // and one popped but not yet counted out (the output thread).
  stats_.set_in_flight_limit(queue_->capacity() + 2);
  last_inference_ms_ = 0;
  frames_inferred_ = 0;
}

void StreamSession::stop() {
  ThreadOwner::Scope in(in_owner_), out(out_owner_);
  count_dropped(frames_among(queue_->set_flushing(true)));
  batcher_.reset();
  team_pre_.reset();
  // Records of batches the batcher dropped may still hold their frames.
  records_.clear();
  pre_.reset();
  pre_model_.reset();
  out_streams_.clear();
}

std::shared_ptr<Batcher> StreamSession::batcher() const {
  return batcher_;
}

void StreamSession::begin_stream(const std::string& stream_id) {
  ThreadOwner::Scope in(in_owner_);
  std::uint64_t key = 0;
  if (in_streams_.find_key([&](const InStream& s) { return s.id == stream_id; }, &key)) {
    in_current_ = key;
    return;
  }
  in_current_ = in_next_++;
  in_stream().id = stream_id;
}

StreamSession::InStream& StreamSession::in_stream() {
  const std::uint64_t forget = forget_after_;
  return in_streams_.get(in_current_, [forget] {
    InStream s;
    s.submitted = ObjectMemory<std::uint64_t>(forget, kMaxRememberedObjects);
    return s;
  });
}

StreamSession::OutStream& StreamSession::out_stream(std::uint64_t stream) {
  const std::uint64_t forget = forget_after_;
  return out_streams_.get(stream, [forget] {
    OutStream s;
    s.results = ObjectMemory<CachedResult>(forget, kMaxRememberedObjects);
    return s;
  });
}

void StreamSession::give_up_slot(std::uint64_t seq, std::size_t slot) {
  queue_->complete(seq, [slot](Item& it) {
    it.rec->slots[slot].delivered = false;
    return --it.pending == 0;
  });
}

void StreamSession::count_dropped(std::uint64_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.frame_dropped(n);
}

std::size_t StreamSession::frames_among(const std::vector<Item>& items) const {
  return static_cast<std::size_t>(
      std::count_if(items.begin(), items.end(), [](const Item& it) { return !it.is_event; }));
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

SubmitResult StreamSession::busy_or_failed(const std::shared_ptr<Record>& rec, SkipReason why) {
  // Written before the entry completes: the output thread reads it after.
  rec->skip = why;
  give_up_slot(rec->seq, 0);
  return {why == SkipReason::kBusy ? SubmitStatus::kBusy : SubmitStatus::kMapFailed, {}};
}

SubmitResult StreamSession::fill_slot(const std::shared_ptr<Record>& rec, Batcher::Slot& slot,
                                      std::unique_ptr<FramePixels> pixels) {
  FrameView view;
  if (!pixels->map(&view)) {
    batcher_->commit(slot, nullptr);
    return busy_or_failed(rec, SkipReason::kFailed);
  }
  if (opts_.preprocess_in_batch) {
    // A frame the preprocessing would refuse fails here, on its own thread.
    try {
      prepare(slot);
      pre_->check(view, nullptr);
    } catch (const std::exception& e) {
      pixels->unmap();
      batcher_->commit(slot, nullptr);
      busy_or_failed(rec, SkipReason::kFailed);
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
    rec->saturation = pre_->saturation();
  } catch (const std::exception& e) {
    pixels->unmap();
    batcher_->commit(slot, nullptr);
    busy_or_failed(rec, SkipReason::kFailed);
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
    r->add_band_saturation(pre.saturation());
    return {};
  };
  batcher_->commit(
      slot,
      [r, index](FrameResult&& res) {
        r->release(1);  // unmapped before the frame can leave
        r->queue->complete(r->seq, [&](Item& it) {
          // Under the queue's lock: the frame's other slots (other
          // batches) may complete at the same time. This slot's bands have
          // all added theirs; the last slot to complete writes the total.
          it.rec->saturation = {r->band_clamped.load(), r->band_peak.load()};
          SlotResult& s = it.rec->slots[index];
          s.preprocess_ms = res.prepare_ms;
          s.result = std::move(res);
          s.delivered = true;
          return --it.pending == 0;
        });
      },
      std::move(prepare), rec);
}

void StreamSession::plan_regions(FrameInference& rec, bool infer, InStream& stream,
                                 std::uint64_t frame_no,
                                 const std::vector<RegionOfInterest>* regions) {
  to_infer_.clear();
  rec.region_mode = true;
  if (!regions) return;
  const int every = std::max(1, opts_.regions.reclassify_interval);
  rec.regions.reserve(regions->size());
  for (const RegionOfInterest& roi : *regions) {
    RegionResult r = plan_region(roi, opts_.regions, rec.frame_width, rec.frame_height);
    if (r.fate == RegionFate::kInferred) {
      if (!infer) {
        r.fate = r.object_id ? RegionFate::kReuse : RegionFate::kNotInferred;
      } else if (r.object_id) {
        const std::uint64_t* last = stream.submitted.touch(*r.object_id, frame_no);
        if (last && frame_no - *last < static_cast<std::uint64_t>(every))
          r.fate = RegionFate::kReuse;
      }
    }
    if (r.fate == RegionFate::kInferred) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.emplace_back();
      to_infer_.push_back(rec.regions.size());
    }
    rec.regions.push_back(r);
  }
  stream.submitted.forget_stale(frame_no);
}

SubmitResult StreamSession::fill_regions(const std::shared_ptr<Record>& rec, InStream& stream,
                                         std::uint64_t frame_no,
                                         std::unique_ptr<FramePixels> owned) {
  const std::size_t n = to_infer_.size();
  const bool skip_when_busy = skip_when_busy_;
  const bool deferred = opts_.preprocess_in_batch;
  FramePixels& pixels = *owned;
  FrameView view;
  bool mapped = false;  // by this thread (deferred: the record holds the mapping)
  bool held = false;    // deferred: the record holds the mapping for n slots
  // The frame may leave (and be written downstream) once its last slot is
  // committed or given up: unmap before that.
  auto give_up_from = [&](std::size_t k, SkipReason why) {
    if (mapped) pixels.unmap();
    mapped = false;
    if (held) rec->release(static_cast<int>(n - k));
    // A frame with a slot committed is inferred; the others leave for `why`.
    if (k == 0) rec->skip = why;
    for (std::size_t j = k; j < n; ++j)
      give_up_slot(rec->seq, static_cast<std::size_t>(rec->regions[to_infer_[j]].slot));
  };
  for (std::size_t k = 0; k < n; ++k) {
    const RegionResult& region = rec->regions[to_infer_[k]];
    const std::size_t index = static_cast<std::size_t>(region.slot);
    const Crop box = region.box;
    const std::optional<std::int64_t> object_id = region.object_id;
    // skip_when_busy skips whole frames: once a frame has its first slot,
    // its other regions wait for theirs (bounded by its region count).
    Batcher::Slot slot = batcher_->acquire(!skip_when_busy || k > 0, flushing_);
    if (!slot) {
      if (flushing_) {
        if (mapped) pixels.unmap();
        if (held) rec->release(static_cast<int>(n - k));
        return {SubmitStatus::kFlushing, {}};
      }
      give_up_from(k, SkipReason::kBusy);
      return {SubmitStatus::kBusy, {}};
    }
    if (k == 0 && !(mapped = pixels.map(&view))) {
      batcher_->commit(slot, nullptr);
      give_up_from(k, SkipReason::kFailed);
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
        give_up_from(k, SkipReason::kFailed);
        return {SubmitStatus::kPrepareFailed, e.what()};
      }
      rec->crops[index] = box;
      commit_deferred(slot, rec, index);
      if (object_id) stream.submitted.put(*object_id, frame_no, frame_no);
      continue;
    }
    SlotResult& s = rec->slots[index];
    try {
      s.transform = preprocess_into(slot, view, &box, s.preprocess_ms);
      rec->saturation.add(pre_->saturation());
    } catch (const std::exception& e) {
      batcher_->commit(slot, nullptr);
      give_up_from(k, SkipReason::kFailed);
      return {SubmitStatus::kPrepareFailed, e.what()};
    }
    if (k + 1 == n) {
      pixels.unmap();
      mapped = false;
    }
    commit_slot(slot, rec, index);
    if (object_id) stream.submitted.put(*object_id, frame_no, frame_no);
  }
  return {SubmitStatus::kQueued, {}};
}

SubmitResult StreamSession::submit_frame(OwnedRef frame, int width, int height, std::uint64_t pts,
                                         std::unique_ptr<FramePixels> pixels,
                                         const std::vector<RegionOfInterest>* regions) {
  ThreadOwner::Scope owner(in_owner_);
  if (flushing_) return {SubmitStatus::kFlushing, {}};
  if (output_code_ != 0) return {SubmitStatus::kStopped, {}};
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_in();
  }
  const std::uint64_t epoch = epoch_;
  if (epoch != in_epoch_) {
    // resume() since the last frame: a seek starts afresh.
    in_streams_.for_each([](InStream& s) { s.submitted.clear(); });
    in_epoch_ = epoch;
  }
  InStream& stream = in_stream();
  const std::uint64_t frame_no = stream.frames++;
  const bool infer = frame_no % opts_.inference_interval == 0;
  const bool skip_when_busy = skip_when_busy_;

  Item item;
  item.obj = std::move(frame);
  item.in_time = Clock::now();
  item.rec = records_.take();
  item.rec->queue = queue_;
  item.rec->team = team_pre_;
  item.rec->frame_width = width;
  item.rec->frame_height = height;
  item.rec->pts = pts;
  item.rec->stream = in_current_;
  item.rec->epoch = epoch;
  if (!infer) item.rec->skip = SkipReason::kInterval;
  if (opts_.region_mode) {
    plan_regions(*item.rec, infer, stream, frame_no, regions);
    item.pending = static_cast<int>(to_infer_.size());
    if (infer && to_infer_.empty()) item.rec->skip = SkipReason::kNoRegions;
  } else if (infer) {
    item.rec->slots.resize(1);
    item.pending = 1;
  }
  const std::shared_ptr<Record> rec = item.rec;
  const bool ready = item.pending == 0;
  // The frame's entry, for the slots' callbacks (committed after this).
  const std::optional<std::uint64_t> seq = queue_->push(std::move(item), ready, !skip_when_busy);
  if (!seq) {
    // The frame (its reference went with the refused item) leaves the stream.
    count_dropped(1);
    if (flushing_) return {SubmitStatus::kFlushing, {}};
    if (output_code_ != 0) return {SubmitStatus::kStopped, {}};
    return {SubmitStatus::kDropped, {}};  // live and the queue is full
  }
  rec->seq = *seq;
  if (!infer) return {SubmitStatus::kSkipped, {}};
  if (opts_.region_mode) {
    if (to_infer_.empty()) return {SubmitStatus::kNoRegions, {}};
    return fill_regions(rec, stream, frame_no, std::move(pixels));
  }

  Batcher::Slot slot = batcher_->acquire(!skip_when_busy, flushing_);
  if (!slot) {
    if (flushing_) return {SubmitStatus::kFlushing, {}};
    return busy_or_failed(rec, SkipReason::kBusy);
  }
  return fill_slot(rec, slot, std::move(pixels));
}

bool StreamSession::push_event(OwnedRef event) {
  ThreadOwner::Scope owner(in_owner_);
  Item item;
  item.obj = std::move(event);
  item.is_event = true;
  return queue_->push(std::move(item), true, true).has_value();
}

void StreamSession::submit_partial() {
  if (batcher_) batcher_->submit_partial();
}

bool StreamSession::drain() {
  ThreadOwner::Scope owner(in_owner_);
  submit_partial();
  return queue_->wait_empty();
}

std::optional<StreamOutput> StreamSession::pop() {
  ThreadOwner::Scope owner(out_owner_);
  std::optional<Item> item = queue_->pop();
  if (!item) return std::nullopt;
  StreamOutput out;
  out.obj = std::move(item->obj);
  out.is_event = item->is_event;
  out.in_time = item->in_time;
  if (item->is_event) return out;
  std::shared_ptr<Record> rec = std::move(item->rec);
  if (rec->epoch != out_epoch_) {
    // The first frame after a resume(): a seek starts afresh.
    out_streams_.for_each([](OutStream& s) {
      s.last.reset();
      s.results.clear();
    });
    out_epoch_ = rec->epoch;
  }
  OutStream& stream = out_stream(rec->stream);
  out.skip = rec->skip.value_or(SkipReason::kFailed);
  out.error = rec->error();
  if (!out.error.empty()) return out;
  if (rec->region_mode) {
    out.inferred = rec->ok();
    resolve_regions(*rec, stream);
    out.results = std::move(rec);
    return out;
  }
  if (rec->ok()) {
    out.inferred = true;
    out.results = rec;
    stream.last = std::move(rec);
  } else if (stream.last && stream.last->frame_width == rec->frame_width &&
             stream.last->frame_height == rec->frame_height) {
    out.results = stream.last;
  }
  return out;
}

void StreamSession::resolve_regions(FrameInference& rec, OutStream& stream) {
  const std::uint64_t frame = ++stream.frames;
  for (RegionResult& r : rec.regions) {
    if (r.fate == RegionFate::kInferred && r.slot >= 0 && rec.slots[r.slot].delivered) {
      r.result_pts = rec.pts;
      if (r.object_id)
        stream.results.put(*r.object_id, frame, CachedResult{rec.slots[r.slot], rec.pts});
      continue;
    }
    if (!r.object_id) continue;
    CachedResult* c = stream.results.touch(*r.object_id, frame);
    // A region due for reuse, or one whose batch slot was dropped (busy).
    if (c && (r.fate == RegionFate::kReuse || r.fate == RegionFate::kInferred)) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.push_back(c->slot);
      r.reused = true;
      r.result_pts = c->pts;
    }
  }
  stream.results.forget_stale(frame);
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
          // Batch figures once per frame, like a full-frame frame's.
          if (first) {
            stats_.batch(s.result.batch_fill, s.result.queue_ms, s.preprocess_ms,
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
  ThreadOwner::Scope owner(out_owner_);
  if (out.is_event) return std::nullopt;  // frames are counted, events are not
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(stats_mu_);
  if (out.results && out.results->region_mode) {
    count_regions(*out.results);
  } else if (out.inferred) {
    for (const SlotResult& s : out.results->slots) {
      if (!s.delivered) continue;
      stats_.batch(s.result.batch_fill, s.result.queue_ms, s.preprocess_ms, s.result.inference_ms);
      last_inference_ms_ = s.result.inference_ms;
    }
  }
  if (out.inferred) {
    if (!valid) stats_.frame_invalid();
    if (out.results->saturation.any()) stats_.frame_saturated();
    ++frames_inferred_;
  }
  stats_.frame_out(now, out.inferred ? nullptr : &out.skip);
  stats_.latency(std::chrono::duration<double, std::milli>(now - out.in_time).count());
  if (opts_.stats_interval.count() > 0 && now - last_stats_ >= opts_.stats_interval) {
    last_stats_ = now;
    return stats_.snapshot(now, true);
  }
  return std::nullopt;
}

void StreamSession::discard(const StreamOutput& out) {
  ThreadOwner::Scope owner(out_owner_);
  if (!out.is_event) count_dropped(1);
}

void StreamSession::set_flushing() {
  flushing_ = true;
  if (batcher_) batcher_->wake();
  count_dropped(frames_among(queue_->set_flushing(true)));
}

void StreamSession::resume() {
  count_dropped(frames_among(queue_->set_flushing(false)));
  ++epoch_;
  flushing_ = false;
  output_code_ = 0;
}

void StreamSession::stop_output(int code, bool discard_queue) {
  output_code_ = code;
  if (discard_queue) count_dropped(frames_among(queue_->set_flushing(true)));
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
