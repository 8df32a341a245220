// Per-stream counters and latency percentiles for the element's stats
// properties and periodic messages. Not thread-safe: the owner locks.
#pragma once

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

struct StatsSnapshot {
  std::uint64_t frames_in = 0, frames_out = 0, inferred = 0, skipped = 0, dropped = 0;
  // Inferred frames whose outputs held NaN or infinity (results marked invalid).
  std::uint64_t invalid = 0;
  // Mean size of the batches this stream's frames ran in (shared batches
  // count the other streams' frames too).
  double mean_batch_fill = 0;
  double fps = 0;  // frames out per second since the previous snapshot with reset_rate
  StagePercentiles queue, preprocess, inference, total;
  // inference-region=roi-list only (region_mode): frames due for inference
  // that had no region to infer, and what became of the regions.
  bool region_mode = false;
  std::uint64_t frames_without_regions = 0;
  std::uint64_t regions_inferred = 0, regions_reused = 0, regions_filtered = 0, regions_skipped = 0,
                regions_dropped = 0;
};

class StreamStats {
 public:
  using Clock = std::chrono::steady_clock;

  void frame_in() { ++s_.frames_in; }
  void frame_skipped() { ++s_.skipped; }
  void frame_dropped() { ++s_.dropped; }
  void frame_invalid() { ++s_.invalid; }
  void set_region_mode(bool on) { s_.region_mode = on; }
  void frame_without_regions() { ++s_.frames_without_regions; }
  // Adds one frame's region outcomes.
  void regions(std::uint64_t inferred, std::uint64_t reused, std::uint64_t filtered,
               std::uint64_t skipped, std::uint64_t dropped) {
    s_.regions_inferred += inferred;
    s_.regions_reused += reused;
    s_.regions_filtered += filtered;
    s_.regions_skipped += skipped;
    s_.regions_dropped += dropped;
  }
  void frame_out(Clock::time_point now);
  // One inferred frame that ran in a batch of `fill` frames.
  void inferred(int fill, double queue_ms, double preprocess_ms, double inference_ms);
  void latency(double total_ms) { total_.add(total_ms); }

  // With reset_rate, fps is measured from now on for the next snapshot.
  StatsSnapshot snapshot(Clock::time_point now, bool reset_rate);

 private:
  StatsSnapshot s_;
  std::uint64_t fill_sum_ = 0;
  LatencyWindow queue_, preprocess_, inference_, total_;
  Clock::time_point rate_start_{};
  std::uint64_t rate_frames_ = 0;
};

}  // namespace torchinfer
