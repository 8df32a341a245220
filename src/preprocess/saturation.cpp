#include "preprocess/saturation.h"

#include <immintrin.h>

#include <cmath>

namespace torchinfer {

namespace {

// The row's largest value: maxps on four accumulators (SSE2, every
// x86-64), two instructions per four pixels.
float row_peak(const float* v, int n) {
  __m128 m0 = _mm_setzero_ps(), m1 = m0, m2 = m0, m3 = m0;
  int x = 0;
  for (; x + 16 <= n; x += 16) {
    m0 = _mm_max_ps(m0, _mm_loadu_ps(v + x));
    m1 = _mm_max_ps(m1, _mm_loadu_ps(v + x + 4));
    m2 = _mm_max_ps(m2, _mm_loadu_ps(v + x + 8));
    m3 = _mm_max_ps(m3, _mm_loadu_ps(v + x + 12));
  }
  for (; x + 4 <= n; x += 4) m0 = _mm_max_ps(m0, _mm_loadu_ps(v + x));
  float lanes[4];
  _mm_storeu_ps(lanes, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
  float peak = *std::max_element(lanes, lanes + 4);
  for (; x < n; ++x) peak = std::max(peak, v[x]);
  return peak;
}

}  // namespace

Saturation clamped_in_row(const float* v, int n, std::uint32_t full_scale) {
  // Rounded as the model input is: float rounding in the resize weights
  // (a white area's 4095.0002) is not a clamped sample.
  const float limit = static_cast<float>(full_scale) + 0.5f;
  // The peak first: a row within range (the usual case) costs one max per
  // pixel, less than half of counting (tests/bench: BM_ClampedInRow);
  // counting every row made a 224x224 frame ~15 % slower to prepare.
  const float peak = row_peak(v, n);
  if (peak < limit) return {};
  int over = 0;
  for (int x = 0; x < n; ++x) over += v[x] >= limit;
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
