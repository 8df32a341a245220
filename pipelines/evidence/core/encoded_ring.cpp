#include "evidence/core/encoded_ring.h"

#include <algorithm>

namespace torchinfer::evidence {

EncodedRing::EncodedRing(std::int64_t span_ns, std::size_t max_bytes)
    : span_ns_(std::max<std::int64_t>(span_ns, 0)), max_bytes_(max_bytes) {}

void EncodedRing::push(EncodedFrame f) {
  std::lock_guard<std::mutex> lock(mu_);
  if (frames_.empty() && !f.keyframe) {
    // Only a keyframe can start a clip. Once frames were kept, a gap here
    // means max_bytes emptied the ring: these frames are lost early too.
    if (newest_ >= 0) evicted_early_++;
    return;
  }
  bytes_ += f.data ? f.data->size() : 0;
  newest_ = std::max(newest_, f.pts_ns);
  frames_.push_back(std::move(f));
  evict_by_span();
  evict_by_bytes();
}

std::size_t EncodedRing::pop_group() {
  std::size_t n = 0;
  do {
    bytes_ -= frames_.front().data ? frames_.front().data->size() : 0;
    frames_.pop_front();
    ++n;
  } while (!frames_.empty() && !frames_.front().keyframe);
  return n;
}

// A group leaves once the next one starts at or before the span's start: the
// frames from the span's start on stay decodable from a keyframe.
void EncodedRing::evict_by_span() {
  const std::int64_t start = newest_ - span_ns_;
  for (;;) {
    auto next = std::find_if(frames_.begin() + 1, frames_.end(),
                             [](const EncodedFrame& f) { return f.keyframe; });
    if (next == frames_.end() || next->pts_ns > start) return;
    pop_group();
  }
}

// Whatever is still here was needed for the span: every frame leaving now
// is a frame a clip will miss.
void EncodedRing::evict_by_bytes() {
  while (bytes_ > max_bytes_ && !frames_.empty()) evicted_early_ += pop_group();
}

std::vector<EncodedFrame> EncodedRing::extract(std::int64_t from_ns, std::int64_t to_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t first = 0;
  for (std::size_t i = 0; i < frames_.size() && frames_[i].pts_ns <= from_ns; ++i)
    if (frames_[i].keyframe) first = i;
  std::vector<EncodedFrame> out;
  for (std::size_t i = first; i < frames_.size(); ++i)
    if (frames_[i].pts_ns <= to_ns) out.push_back(frames_[i]);
  return out;
}

std::size_t EncodedRing::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::size_t EncodedRing::frames() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_.size();
}

std::uint64_t EncodedRing::evicted_early() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_early_;
}

std::int64_t EncodedRing::newest_pts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_.empty() ? -1 : newest_;
}

std::int64_t EncodedRing::oldest_pts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_.empty() ? -1 : frames_.front().pts_ns;
}

}  // namespace torchinfer::evidence
