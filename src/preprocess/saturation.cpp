#include "preprocess/saturation.h"

#include <cmath>

namespace torchinfer {

Saturation clamped_in_row(const float* v, int n, std::uint32_t full_scale) {
  // Rounded as the model input is: float rounding in the resize weights
  // (a white area's 4095.0002) is not a clamped sample.
  const float limit = static_cast<float>(full_scale) + 0.5f;
  int over = 0;
  for (int x = 0; x < n; ++x) over += v[x] >= limit;
  if (over == 0) return {};
  // Eight independent maxima vectorise (one chain of maxss does not): a
  // saturated frame costs about as much as one in range.
  constexpr int kLanes = 8;
  float lanes[kLanes] = {};
  int x = 0;
  for (; x + kLanes <= n; x += kLanes)
    for (int k = 0; k < kLanes; ++k) lanes[k] = v[x + k] > lanes[k] ? v[x + k] : lanes[k];
  float peak = *std::max_element(lanes, lanes + kLanes);
  for (; x < n; ++x) peak = std::max(peak, v[x]);
  return {static_cast<std::uint64_t>(over),
          static_cast<std::uint32_t>(std::min(65535.f, std::round(peak)))};
}

int bits_for(std::uint32_t sample) {
  int bits = 8;
  while (bits < 32 && (std::uint64_t{1} << bits) - 1 < sample) ++bits;
  return bits;
}

bool SaturationReport::record(const Saturation& frame, Clock::time_point now) {
  const bool starts_burst = bursts_.record(frame.any());
  if (!frame.any()) return false;
  const bool needs_more = bits_for(frame.peak) > warned_bits_;
  if (!needs_more && !(starts_burst && now - last_ >= quiet_)) return false;
  warned_bits_ = std::max(warned_bits_, bits_for(frame.peak));
  last_ = now;
  return true;
}

std::string saturation_warning(int input_bits, const Saturation& frame,
                               const SaturationReport& report) {
  const std::uint64_t full = (std::uint64_t{1} << input_bits) - 1;
  const std::uint64_t n = report.frames();
  return "GRAY16_LE samples reach " + std::to_string(frame.peak) +
         " but input-bits=" + std::to_string(input_bits) + " makes " + std::to_string(full) +
         " white: " + std::to_string(frame.pixels) +
         " model input pixels of this frame clamped to white, " + std::to_string(n) +
         (n == 1 ? " frame" : " frames") +
         " so far; set input-bits=" + std::to_string(bits_for(frame.peak)) +
         " (or the camera's bit depth, if higher).";
}

}  // namespace torchinfer
