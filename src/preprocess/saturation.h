// GRAY16_LE samples above the input-bits full scale: what the preprocessing
// clamped, and when the element tells the operator. A camera that sends more
// significant bits than input-bits says (the setting is too low, or the
// camera is set to another pixel format) shows the model white where the
// scene has detail; counted and reported, never silent.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/burst_report.h"

namespace torchinfer {

// Model input pixels clamped to white because their sample, resized to the
// model's input and rounded to the nearest integer, exceeded 2^input_bits -
// 1. With resizing a pixel counts when the weighted mean of the samples it
// covers exceeds full scale: one hot sample averaged with darker ones is not
// clamped, so it is not counted. A pixel counts once, whatever the model's
// channel count.
struct Saturation {
  std::uint64_t pixels = 0;
  std::uint32_t peak = 0;  // the largest such resized sample, 0 when none

  void add(const Saturation& o) {
    pixels += o.pixels;
    peak = std::max(peak, o.peak);
  }
  bool any() const { return pixels > 0; }
};

// The clamped pixels of one resized row of samples `v` (sample units),
// against the full scale 2^bits - 1. Costs a compare per pixel; the peak is
// looked for only in rows that clamp.
Saturation clamped_in_row(const float* v, int n, std::uint32_t full_scale);

// The fewest significant bits that hold `sample`, at least 8 (input-bits'
// minimum).
int bits_for(std::uint32_t sample);

// Which frames with clamped pixels to warn about, so that a camera that
// saturates now and then does not flood the bus: the first one; one whose
// samples need more bits than the last warning named; and the first of a
// burst of such frames once `quiet` has passed since the last warning.
class SaturationReport {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SaturationReport(Clock::duration quiet = std::chrono::minutes(1)) : quiet_(quiet) {}

  // Records one inferred frame; true when it is to be warned about.
  bool record(const Saturation& frame, Clock::time_point now);
  std::uint64_t frames() const { return bursts_.total_bad(); }  // frames with clamped pixels
  int warned_bits() const { return warned_bits_; }              // 0 before the first warning

 private:
  Clock::duration quiet_;
  BurstReport bursts_;
  int warned_bits_ = 0;
  Clock::time_point last_{};
};

// The warning for `frame`, after report.record(frame) returned true:
// "GRAY16_LE samples reach 16383 but input-bits=12 makes 4095 white: ...;
// set input-bits=14 ...".
std::string saturation_warning(int input_bits, const Saturation& frame,
                               const SaturationReport& report);

}  // namespace torchinfer
