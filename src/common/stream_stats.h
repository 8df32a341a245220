// Per-stream counters and latency percentiles for the element's stats
// properties and periodic messages. Not thread-safe: the owner locks.
//
// Every frame that entered is, at the moment of reading, exactly one of:
//   inferred   left with a result computed on it;
//   skipped    left without one, for one reason (SkipReason);
//   dropped    never left (flushed by a seek or stop, discarded while the
//              output was stopped, refused by a full queue when live);
//   in flight  inside the element: queued, in a batch, or blocked on a full
//              queue (counted in, not yet anything else).
// so that, in every snapshot,
//   frames_in  = inferred + skipped + dropped + in_flight
//   frames_out = inferred + skipped,  skipped = sum of skipped_by.
// A frame's fate is counted once, when it leaves or is discarded; in_flight
// is what is left over, and is 0 once a stream has drained (EOS, drain
// query, stop).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace torchinfer {

// The most recent samples (a ring), so percentiles follow the current load
// rather than the whole run.
class LatencyWindow {
 public:
  explicit LatencyWindow(std::size_t capacity = 1024);
  void add(double ms);
  // Nearest-rank percentile (p in 0..100) of the samples held; 0 if none.
  double percentile(double p) const;
  std::size_t count() const { return samples_.size(); }

 private:
  std::vector<double> samples_;
  std::size_t capacity_;
  std::size_t next_ = 0;
};

struct StagePercentiles {
  double p50 = 0, p95 = 0, p99 = 0;
};

// Why a frame left without an inference of its own.
enum class SkipReason : std::uint8_t {
  kInterval,   // not due (inference-interval)
  kBusy,       // the model was busy and the drop policy is skip (live sources)
  kNoRegions,  // roi-list: no region due for inference on it
  kFailed,     // its pixels could not be read or prepared (the stream then stops)
  kStill,      // inference-gate=motion: nothing moved since the last inferred frame
};
constexpr std::size_t kSkipReasons = 5;
// "interval", "busy", "no-regions", "failed", "still": the stats fields' and the
// metrics' label values (inline: the server reads them without the core).
inline const char* to_string(SkipReason r) {
  switch (r) {
    case SkipReason::kInterval:
      return "interval";
    case SkipReason::kBusy:
      return "busy";
    case SkipReason::kNoRegions:
      return "no-regions";
    case SkipReason::kFailed:
      return "failed";
    case SkipReason::kStill:
      return "still";
  }
  return "?";
}

struct StatsSnapshot {
  std::uint64_t frames_in = 0, frames_out = 0, inferred = 0, skipped = 0, dropped = 0;
  std::uint64_t in_flight = 0;  // frames_in - frames_out - dropped when read
  // The most frames the stream can hold at once (its queue, the frame being
  // submitted and the one being sent): in_flight never exceeds it.
  std::uint64_t in_flight_limit = 0;
  std::array<std::uint64_t, kSkipReasons> skipped_by{};  // indexed by SkipReason
  // Inferred frames whose outputs held NaN or infinity (results marked invalid).
  std::uint64_t invalid = 0;
  // Inferred frames with model input pixels clamped to white (GRAY16_LE
  // samples above input-bits: preprocess/saturation.h).
  std::uint64_t saturated = 0;
  // Mean size of the batches this stream's frames ran in (shared batches
  // count the other streams' frames too).
  double mean_batch_fill = 0;
  double fps = 0;  // frames out per second since the previous snapshot with reset_rate
  StagePercentiles queue, preprocess, inference, total;
  // inference-region=roi-list only (region_mode): what became of the regions.
  bool region_mode = false;
  std::uint64_t regions_inferred = 0, regions_reused = 0, regions_filtered = 0, regions_skipped = 0,
                regions_dropped = 0;

  std::uint64_t skipped_for(SkipReason r) const { return skipped_by[static_cast<std::size_t>(r)]; }
};

class StreamStats {
 public:
  using Clock = std::chrono::steady_clock;

  void frame_in() { ++s_.frames_in; }
  // A frame left: with its own inference (reason empty) or skipped.
  void frame_out(Clock::time_point now, const SkipReason* reason);
  // A frame that entered will never leave.
  void frame_dropped(std::uint64_t n = 1) { s_.dropped += n; }
  void frame_invalid() { ++s_.invalid; }
  void frame_saturated() { ++s_.saturated; }
  void set_region_mode(bool on) { s_.region_mode = on; }
  void set_in_flight_limit(std::uint64_t n) { s_.in_flight_limit = n; }
  // Adds one frame's region outcomes.
  void regions(std::uint64_t inferred, std::uint64_t reused, std::uint64_t filtered,
               std::uint64_t skipped, std::uint64_t dropped) {
    s_.regions_inferred += inferred;
    s_.regions_reused += reused;
    s_.regions_filtered += filtered;
    s_.regions_skipped += skipped;
    s_.regions_dropped += dropped;
  }
  // The batch figures of one inferred frame that ran in a batch of `fill`.
  void batch(int fill, double queue_ms, double preprocess_ms, double inference_ms);
  void latency(double total_ms) { total_.add(total_ms); }

  // With reset_rate, fps is measured from now on for the next snapshot.
  StatsSnapshot snapshot(Clock::time_point now, bool reset_rate);

 private:
  StatsSnapshot s_;
  std::uint64_t fill_sum_ = 0, batches_ = 0;
  LatencyWindow queue_, preprocess_, inference_, total_;
  Clock::time_point rate_start_{};
  std::uint64_t rate_frames_ = 0;
};

}  // namespace torchinfer
