#include "common/stream_stats.h"

#include <algorithm>
#include <cmath>

namespace torchinfer {

LatencyWindow::LatencyWindow(std::size_t capacity) : capacity_(capacity ? capacity : 1) {
  samples_.reserve(capacity_);
}

void LatencyWindow::add(double ms) {
  if (samples_.size() < capacity_) {
    samples_.push_back(ms);
  } else {
    samples_[next_] = ms;
    next_ = (next_ + 1) % capacity_;
  }
}

double LatencyWindow::percentile(double p) const {
  if (samples_.empty()) return 0;
  std::vector<double> v = samples_;
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * v.size());
  const std::size_t k = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

void StreamStats::frame_out(Clock::time_point now, const SkipReason* reason) {
  if (rate_start_ == Clock::time_point{}) rate_start_ = now;
  ++s_.frames_out;
  ++rate_frames_;
  if (!reason) {
    ++s_.inferred;
    return;
  }
  ++s_.skipped;
  ++s_.skipped_by[static_cast<std::size_t>(*reason)];
}

void StreamStats::batch(int fill, double queue_ms, double preprocess_ms, double inference_ms) {
  ++batches_;
  fill_sum_ += fill;
  queue_.add(queue_ms);
  preprocess_.add(preprocess_ms);
  inference_.add(inference_ms);
}

namespace {
StagePercentiles of(const LatencyWindow& w) {
  return {w.percentile(50), w.percentile(95), w.percentile(99)};
}
}  // namespace

StatsSnapshot StreamStats::snapshot(Clock::time_point now, bool reset_rate) {
  StatsSnapshot out = s_;
  out.mean_batch_fill = batches_ ? static_cast<double>(fill_sum_) / batches_ : 0;
  // Unsigned on purpose: a frame counted twice shows as a huge figure, which
  // the tests' invariant check catches, rather than as a plausible one.
  out.in_flight = s_.frames_in - s_.frames_out - s_.dropped;
  const double secs = rate_start_ == Clock::time_point{}
                          ? 0
                          : std::chrono::duration<double>(now - rate_start_).count();
  out.fps = secs > 0 ? rate_frames_ / secs : 0;
  out.queue = of(queue_);
  out.preprocess = of(preprocess_);
  out.inference = of(inference_);
  out.total = of(total_);
  if (reset_rate) {
    rate_start_ = now;
    rate_frames_ = 0;
  }
  return out;
}

}  // namespace torchinfer
