// A rotated rectangle in frame pixels, as yolov8-obb detections carry it.
// The angle is in degrees, clockwise in image coordinates (x right, y
// down): at +30 the box's width axis points 30 degrees below the +x axis.
// normalized() keeps it in [-90, 90): a rectangle turned by 180 degrees is
// the same rectangle, so every box has exactly one angle in that range
// (width and height stay as given; the width axis is the box's "x").
#pragma once

#include <array>
#include <cmath>

#include "common/box.h"

namespace torchinfer {

struct RotatedBox {
  double cx = 0, cy = 0, width = 0, height = 0;
  double angle = 0;  // degrees, clockwise in image coordinates, [-90, 90)

  double area() const { return std::max(0.0, width) * std::max(0.0, height); }
  // The four corners, in order around the box (image coordinates).
  std::array<std::array<double, 2>, 4> corners() const {
    const double a = angle * kPi / 180, c = std::cos(a), s = std::sin(a);
    const double ux = c * width / 2, uy = s * width / 2;     // half the width axis
    const double vx = -s * height / 2, vy = c * height / 2;  // half the height axis
    return {{{cx - ux - vx, cy - uy - vy},
             {cx + ux - vx, cy + uy - vy},
             {cx + ux + vx, cy + uy + vy},
             {cx - ux + vx, cy - uy + vy}}};
  }
  // The axis-aligned box around it.
  Box bounds() const {
    const double a = angle * kPi / 180;
    const double hw = (std::abs(std::cos(a)) * width + std::abs(std::sin(a)) * height) / 2;
    const double hh = (std::abs(std::sin(a)) * width + std::abs(std::cos(a)) * height) / 2;
    return {cx - hw, cy - hh, cx + hw, cy + hh};
  }
  static constexpr double kPi = 3.14159265358979323846;
};

// An angle in degrees brought into [-90, 90); NaN and infinities stay as
// they are (callers reject them).
inline double normalize_angle_degrees(double deg) {
  if (!std::isfinite(deg)) return deg;
  double a = std::fmod(deg + 90.0, 180.0);
  if (a < 0) a += 180.0;
  if (a >= 180.0) a = 0.0;  // fmod rounding at the wrap
  return a - 90.0;
}

}  // namespace torchinfer
