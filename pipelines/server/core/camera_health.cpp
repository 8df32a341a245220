#include "server/core/camera_health.h"

#include <cmath>
#include <cstdio>

namespace torchinfer::server {

const char* to_string(CameraCondition c) {
  switch (c) {
    case CameraCondition::kOk:
      return "ok";
    case CameraCondition::kDegraded:
      return "degraded";
    case CameraCondition::kStalled:
      return "stalled";
  }
  return "unknown";
}

void CameraHealthWindow::restart(double now_s) {
  samples_.clear();
  last_frame_s_ = now_s;
  awaited_since_.reset();
}

void CameraHealthWindow::on_counts(double now_s, std::uint64_t received, std::uint64_t lost) {
  if (!samples_.empty() && received > samples_.back().received) {
    last_frame_s_ = now_s;
    awaited_since_.reset();
  }
  samples_.push_back({now_s, received, lost});
  // Keep one sample at or before the window's start: the base of the
  // deltas. The thread samples every 10-100 ms: at most 1000 kept.
  while (samples_.size() > 2 && samples_[1].t <= now_s - limits_.window_s) samples_.pop_front();
}

void CameraHealthWindow::on_trigger(double now_s) {
  if (!awaited_since_) awaited_since_ = now_s;
}

namespace {
std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

CameraVerdict CameraHealthWindow::verdict(double now_s, bool free_run) const {
  CameraVerdict v;
  if (samples_.size() >= 2) {
    v.window_received = samples_.back().received - samples_.front().received;
    v.window_lost = samples_.back().lost - samples_.front().lost;
  }
  const std::uint64_t total = v.window_received + v.window_lost;
  v.lost_ratio = total ? static_cast<double>(v.window_lost) / total : 0;
  const std::optional<double> expected =
      free_run ? std::optional<double>(last_frame_s_) : awaited_since_;
  v.since_frame_s = expected ? std::max(0.0, now_s - *expected) : 0;
  if (expected && v.since_frame_s >= limits_.stall_s) {
    v.condition = CameraCondition::kStalled;
    v.reason = fmt("no complete frame for %.1f s", v.since_frame_s) +
               (v.window_lost ? fmt(" (%.0f frames lost in the last %.0f s)",
                                    static_cast<double>(v.window_lost), limits_.window_s)
                              : "");
  } else if (total >= limits_.min_frames && v.lost_ratio >= limits_.degraded_ratio) {
    v.condition = CameraCondition::kDegraded;
    v.reason =
        fmt("%.0f%% of the frames lost in the last %.0f s", 100 * v.lost_ratio, limits_.window_s) +
        fmt(" (%.0f of %.0f)", static_cast<double>(v.window_lost), static_cast<double>(total));
  }
  return v;
}

}  // namespace torchinfer::server
