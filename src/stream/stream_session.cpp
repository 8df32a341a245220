#include "stream/stream_session.h"

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
  const std::size_t in_batches =
      static_cast<std::size_t>(batcher->options().buffers) * batcher->options().batch_size;
  queue_->set_capacity(in_batches * options.inference_interval + 8);
  opts_ = std::move(options);
  batcher_ = std::move(batcher);
  pre_.reset();
  pre_model_.reset();
  frame_counter_ = 0;
  last_.reset();
  last_stats_ = Clock::now();
  output_code_ = 0;
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = StreamStats{};
  last_inference_ms_ = 0;
  frames_inferred_ = 0;
}

void StreamSession::stop() {
  queue_->set_flushing(true);
  batcher_.reset();
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

SubmitResult StreamSession::fill_slot(std::uint64_t seq, std::size_t index, Batcher::Slot& slot,
                                      FramePixels& pixels) {
  FrameView view;
  if (!pixels.map(&view)) {
    batcher_->commit(slot, nullptr);
    give_up_slot(seq, index);
    return {SubmitStatus::kMapFailed, {}};
  }
  FrameTransform tf;
  double pre_ms = 0;
  try {
    if (slot.model != pre_model_) {
      pre_ = std::make_unique<Preprocessor>(opts_.preprocess_for(slot.model->config));
      pre_model_ = slot.model;
    }
    const auto t0 = Clock::now();
    tf = slot.model->config.input_uint8 ? pre_->run(view, static_cast<std::uint8_t*>(slot.data))
                                        : pre_->run(view, static_cast<float*>(slot.data));
    pre_ms = ms_since(t0);
  } catch (const std::exception& e) {
    pixels.unmap();
    batcher_->commit(slot, nullptr);
    give_up_slot(seq, index);
    return {SubmitStatus::kPrepareFailed, e.what()};
  }
  pixels.unmap();
  std::shared_ptr<Queue> queue = queue_;
  batcher_->commit(slot, [queue, seq, index, tf, pre_ms](FrameResult&& r) {
    queue->complete(seq, [&](Item& it) {
      SlotResult& s = it.rec->slots[index];
      s.result = std::move(r);
      s.transform = tf;
      s.preprocess_ms = pre_ms;
      s.delivered = true;
      return --it.pending == 0;
    });
  });
  return {SubmitStatus::kQueued, {}};
}

SubmitResult StreamSession::submit_frame(OwnedRef frame, int width, int height, std::uint64_t pts,
                                         FramePixels& pixels) {
  if (flushing_) return {SubmitStatus::kFlushing, {}};
  if (output_code_ != 0) return {SubmitStatus::kStopped, {}};
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_in();
  }
  const bool infer = frame_counter_++ % opts_.inference_interval == 0;
  const bool skip_when_busy = skip_when_busy_;

  Item item;
  item.obj = std::move(frame);
  item.in_time = Clock::now();
  item.rec = std::make_shared<FrameInference>();
  item.rec->frame_width = width;
  item.rec->frame_height = height;
  item.rec->pts = pts;
  if (infer) {
    item.rec->slots.resize(1);
    item.pending = 1;
  }
  const std::optional<std::uint64_t> seq = queue_->push(std::move(item), !infer, !skip_when_busy);
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

  Batcher::Slot slot = batcher_->acquire(!skip_when_busy, flushing_);
  if (!slot) {
    if (flushing_) return {SubmitStatus::kFlushing, {}};
    give_up_slot(*seq, 0);
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.frame_dropped();
    return {SubmitStatus::kDropped, {}};
  }
  return fill_slot(*seq, 0, slot, pixels);
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

std::optional<StatsSnapshot> StreamSession::finish(const StreamOutput& out, bool valid) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(stats_mu_);
  if (out.inferred) {
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
  flushing_ = false;
  output_code_ = 0;
}

void StreamSession::stop_output(int code, bool discard_queue) {
  output_code_ = code;
  if (discard_queue) queue_->set_flushing(true);
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
