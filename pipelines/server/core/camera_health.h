// Whether a machine-vision camera's frames really reach the analysis,
// judged over a sliding window from its counters (server/frame_loss.h):
//   stalled   no complete frame for stall_s while one is expected (free-run,
//             or a software trigger sent and not yet answered), however
//             many broken frames arrive meanwhile;
//   degraded  at least degraded_ratio of the window's frames were lost
//             (and the window saw at least min_frames);
//   ok        otherwise.
// The camera's connection (reconnecting, failed) is StreamHealth's; this
// only refines "running". Pure: the acquisition thread feeds it its totals
// and a clock; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace torchinfer::server {

enum class CameraCondition { kOk, kDegraded, kStalled };
const char* to_string(CameraCondition c);

struct CameraVerdict {
  CameraCondition condition = CameraCondition::kOk;
  double lost_ratio = 0;  // lost / (received + lost) over the window; 0 with no frame
  std::uint64_t window_received = 0, window_lost = 0;
  double since_frame_s = 0;  // since the last complete frame (or since one was expected)
  std::string reason;        // empty when ok
};

class CameraHealthWindow {
 public:
  struct Limits {
    double window_s = 10;
    double degraded_ratio = 0.2;
    std::uint64_t min_frames = 10;
    double stall_s = 2;
  };
  CameraHealthWindow() = default;
  explicit CameraHealthWindow(Limits l) : limits_(l) {}
  void set_stall_s(double s) { limits_.stall_s = s; }
  const Limits& limits() const { return limits_; }

  // A new acquisition starts at now_s: the window empties, the clock of the
  // last frame starts from here.
  void restart(double now_s);
  // The camera's totals so far (they never go down): complete frames
  // received, frames lost.
  void on_counts(double now_s, std::uint64_t received, std::uint64_t lost);
  // A software trigger went out: a frame is expected from now (if none was).
  void on_trigger(double now_s);
  // `free_run`: frames are always expected; else only after a trigger.
  CameraVerdict verdict(double now_s, bool free_run) const;

 private:
  struct Sample {
    double t;
    std::uint64_t received, lost;
  };
  Limits limits_;
  std::deque<Sample> samples_;  // oldest first; the first is the window's base
  double last_frame_s_ = 0;
  std::optional<double> awaited_since_;  // a trigger unanswered since then
};

}  // namespace torchinfer::server
