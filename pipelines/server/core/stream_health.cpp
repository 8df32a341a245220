#include "server/core/stream_health.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchinfer::server {

const char* to_string(StreamState s) {
  switch (s) {
    case StreamState::kStarting:
      return "starting";
    case StreamState::kRunning:
      return "running";
    case StreamState::kReconnecting:
      return "reconnecting";
    case StreamState::kEnded:
      return "ended";
    case StreamState::kFailed:
      return "failed";
    case StreamState::kStopping:
      return "stopping";
    case StreamState::kDegraded:
      return "degraded";
    case StreamState::kStalled:
      return "stalled";
  }
  return "unknown";
}

namespace {
bool final_state(StreamState s) {
  return s == StreamState::kFailed || s == StreamState::kStopping || s == StreamState::kEnded;
}
}  // namespace

void StreamHealth::on_frame() {
  if (state_ == StreamState::kStarting) state_ = StreamState::kRunning;
}

void StreamHealth::on_source_resumed() {
  if (final_state(state_) || !lost_) return;
  reconnects_++;
  lost_ = false;
  // Recovered: the outage's reason is history, not the camera's state.
  previous_error_ = last_error_;
  last_error_.clear();
  state_ = StreamState::kRunning;
}

void StreamHealth::on_source_ready() {
  if (state_ == StreamState::kStarting) state_ = StreamState::kRunning;
  on_source_resumed();
}

void StreamHealth::on_source_lost(const std::string& reason) {
  if (final_state(state_)) return;
  last_error_ = reason;
  // Failed attempts while already down are one outage, not several.
  if (!lost_) disconnects_++;
  lost_ = true;
  state_ = StreamState::kReconnecting;
}

void StreamHealth::on_eos() {
  if (final_state(state_)) return;
  state_ = StreamState::kEnded;
}

void StreamHealth::on_error(const std::string& message) {
  errors_++;
  // Once failed, later errors are consequences; the first one says why.
  if (state_ != StreamState::kFailed) last_error_ = message;
  if (state_ != StreamState::kStopping) state_ = StreamState::kFailed;
}

void StreamHealth::on_stopping() {
  state_ = StreamState::kStopping;
}

void LatencyWindow::add(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return;
  recent_.push_back(seconds);
  if (recent_.size() > capacity_) recent_.pop_front();
  sum_ += seconds;
  count_++;
}

double LatencyWindow::quantile(double q) const {
  if (recent_.empty()) return 0;
  std::vector<double> v(recent_.begin(), recent_.end());
  const std::size_t k =
      std::min(v.size() - 1, static_cast<std::size_t>(std::ceil(q * v.size())) - (q > 0 ? 1 : 0));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace torchinfer::server
