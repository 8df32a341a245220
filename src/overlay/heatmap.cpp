#include "overlay/heatmap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "overlay/draw.h"

namespace torchinfer {
namespace {

std::array<Rgb, 256> jet_table() {
  cv::Mat ramp(1, 256, CV_8UC1);
  for (int i = 0; i < 256; ++i) ramp.at<std::uint8_t>(0, i) = static_cast<std::uint8_t>(i);
  cv::Mat bgr;
  cv::applyColorMap(ramp, bgr, cv::COLORMAP_JET);
  std::array<Rgb, 256> t{};
  for (int i = 0; i < 256; ++i) {
    const cv::Vec3b c = bgr.at<cv::Vec3b>(0, i);
    t[static_cast<std::size_t>(i)] = Rgb{c[2], c[1], c[0]};
  }
  return t;
}

}  // namespace

double heat_of(double v, const MapRule& rule) {
  if (std::isnan(v)) return 0.0;
  if (rule.norm) return std::clamp(v, 0.0, 1.0);
  return std::clamp(rule.threshold > 0 ? v / (2 * rule.threshold) : v, 0.0, 1.0);
}

Rgb heat_colour(double heat) {
  static const std::array<Rgb, 256> table = jet_table();
  const long i = std::lround(std::clamp(heat, 0.0, 1.0) * 255);
  return table[static_cast<std::size_t>(i)];
}

std::uint8_t blend_sample(std::uint8_t dst, std::uint8_t c, double alpha) {
  return static_cast<std::uint8_t>(
      std::clamp(std::lround(dst + (static_cast<double>(c) - dst) * alpha), 0L, 255L));
}

}  // namespace torchinfer
