#include "stream/stream_session.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace torchinfer {
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
  if (options.gate.enabled) MotionGate check(options.gate);  // throws for bad options
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
  const MotionGateOptions* gate = opts_.gate.enabled ? &opts_.gate : nullptr;
  return in_streams_.get(in_current_, [forget, gate] {
    InStream s;
    s.submitted = ObjectMemory<std::uint64_t>(forget, kMaxRememberedObjects);
    if (gate) s.gate = MotionGate(*gate);
    if (gate) s.tile_gate = TileGate(*gate);
    return s;
  });
}

GateDecision StreamSession::judge_motion(InStream& stream, FramePixels* pixels) {
  FrameView view;
  if (!pixels || !pixels->map(&view)) return GateDecision::kFirst;
  const GateDecision d = stream.gate.decide(view);
  // Unmapped at once: a frame may leave (and be written) without another
  // word from this thread once it is queued.
  pixels->unmap();
  return d;
}

bool StreamSession::gate_frame(InStream& stream, FramePixels* pixels,
                               const std::vector<RegionOfInterest>* regions) {
  if (opts_.tiles && regions) return judge_tiles(stream, pixels, *regions);
  return judge_motion(stream, pixels) != GateDecision::kStill;
}

bool StreamSession::judge_tiles(InStream& stream, FramePixels* pixels,
                                const std::vector<RegionOfInterest>& tiles) {
  FrameView view;
  const bool mapped = pixels && pixels->map(&view);
  // Unreadable: every tile kFirst (the fill path reports it).
  const std::vector<GateDecision>& d = stream.tile_gate.decide(mapped ? view : FrameView{}, tiles);
  if (mapped) pixels->unmap();
  stream.tiles_judged = true;
  return std::any_of(d.begin(), d.end(), [](GateDecision g) { return g != GateDecision::kStill; });
}

StreamSession::OutStream& StreamSession::out_stream(std::uint64_t stream) {
  const std::uint64_t forget = forget_after_;
  return out_streams_.get(stream, [forget] {
    OutStream s;
    s.results = ObjectMemory<CachedResult>(forget, kMaxRememberedObjects);
    return s;
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

// The frame's record and what it asks of the model: one target per region
// to infer or, full frame, one without a crop (to_infer_).
std::shared_ptr<StreamSession::Record> StreamSession::plan_frame(
    int width, int height, std::uint64_t pts, bool infer, InStream& stream, std::uint64_t frame_no,
    const std::vector<RegionOfInterest>* regions) {
  std::shared_ptr<Record> rec = records_.take();
  rec->queue = queue_;
  rec->team = team_pre_;
  rec->frame_width = width;
  rec->frame_height = height;
  rec->pts = pts;
  rec->stream = in_current_;
  rec->epoch = in_epoch_;
  to_infer_.clear();
  if (!infer) rec->skip = SkipReason::kInterval;
  if (opts_.region_mode) {
    plan_regions(*rec, infer, stream, frame_no, regions);
    if (infer && to_infer_.empty()) rec->skip = SkipReason::kNoRegions;
  } else if (infer) {
    rec->slots.resize(1);
    to_infer_.push_back({0, Crop{}, std::nullopt});
  }
  return rec;
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
    in_streams_.for_each([](InStream& s) {
      s.submitted.clear();
      s.gate.reset();
      s.tile_gate.reset();
    });
    in_epoch_ = epoch;
  }
  InStream& stream = in_stream();
  const std::uint64_t frame_no = stream.frames++;
  bool infer = frame_no % opts_.inference_interval == 0;
  const bool gated = infer && opts_.gate.enabled;
  stream.tiles_judged = false;
  if (gated) infer = gate_frame(stream, pixels.get(), regions);
  const bool skip_when_busy = skip_when_busy_;

  Item item;
  item.obj = std::move(frame);
  item.in_time = Clock::now();
  item.rec = plan_frame(width, height, pts, infer, stream, frame_no, regions);
  if (gated && !infer) item.rec->skip = SkipReason::kStill;
  item.pending = static_cast<int>(to_infer_.size());
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
  if (to_infer_.empty()) return {SubmitStatus::kNoRegions, {}};
  SubmitResult r = fill(rec, stream, frame_no, std::move(pixels), skip_when_busy);
  // Only a frame that went to the model is what later frames are compared
  // with: one skipped as busy leaves the reference as it was.
  if (gated && r.status == SubmitStatus::kQueued) {
    if (stream.tiles_judged)
      stream.tile_gate.commit();
    else
      stream.gate.commit();
  }
  return r;
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
