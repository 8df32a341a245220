// What a camera is doing, told from the events its pipeline reports, and the
// figures the REST API and /metrics show for it. Not thread-safe: the glue
// holds one lock around each camera's health.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace torchinfer::server {

enum class StreamState {
  kStarting,      // pipeline built, no frame through yet (model loading, connecting)
  kRunning,       // frames arrive
  kReconnecting,  // the RTSP source lost its server, or the camera is not there; retrying
  kEnded,         // a file played once reached its end
  kFailed,        // the pipeline stopped on an error (last_error says which)
  kStopping,      // removed or draining; about to go
  // A running machine-vision camera whose frames do not reach the analysis
  // (server/camera_health.h): never entered by StreamHealth itself; the
  // glue reports them in place of kRunning.
  kDegraded,  // most of the recent frames lost
  kStalled,   // no complete frame for a while although one is expected
};
constexpr int kStreamStateCount = 8;
const char* to_string(StreamState s);

class StreamHealth {
 public:
  StreamState state() const { return state_; }
  // Empty again once the source recovers; previous_error() keeps the
  // outage's reason then.
  const std::string& last_error() const { return last_error_; }
  const std::string& previous_error() const { return previous_error_; }
  std::uint64_t reconnects() const { return reconnects_; }
  std::uint64_t disconnects() const { return disconnects_; }
  std::uint64_t errors() const { return errors_; }

  // A frame reached the end of the pipeline. Frames still on their way
  // after the source lost its server do not end an outage.
  void on_frame();
  // The RTSP source lost its server (error, end of stream, stall).
  void on_source_lost(const std::string& reason);
  // The RTSP source delivers frames again after an outage.
  void on_source_resumed();
  // A machine-vision camera is acquiring: running even before its first
  // frame (a triggered camera may wait for its trigger indefinitely), and
  // the end of an outage.
  void on_source_ready();
  // The end of a file played once.
  void on_eos();
  // A pipeline error; the camera stays failed until removed.
  void on_error(const std::string& message);
  void on_stopping();

 private:
  StreamState state_ = StreamState::kStarting;
  std::string last_error_, previous_error_;
  std::uint64_t reconnects_ = 0, disconnects_ = 0, errors_ = 0;
  bool lost_ = false;
};

// End-to-end latency of inferred frames: quantiles over the latest
// `capacity` samples, sum and count over all (a Prometheus summary).
class LatencyWindow {
 public:
  explicit LatencyWindow(std::size_t capacity = 1024) : capacity_(capacity) {}
  void add(double seconds);
  // q in [0, 1]; 0 when empty. Nearest rank.
  double quantile(double q) const;
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

 private:
  std::size_t capacity_;
  std::deque<double> recent_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace torchinfer::server
