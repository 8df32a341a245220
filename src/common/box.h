// The one axis-aligned box of the core: detections, tracks, parts, truth
// and evidence crops all measure overlap with these functions, so a
// tracker's IoU and the scorer's IoU cannot drift apart.
#pragma once

#include <algorithm>

namespace torchinfer {

struct Box {
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;  // frame pixels unless said
  double width() const { return x_max - x_min; }
  double height() const { return y_max - y_min; }
  // An inverted box (max < min) has no area rather than a negative one.
  double area() const { return std::max(0.0, width()) * std::max(0.0, height()); }
  double center_x() const { return (x_min + x_max) / 2; }
  double center_y() const { return (y_min + y_max) / 2; }
  bool contains(double x, double y) const {
    return x >= x_min && x <= x_max && y >= y_min && y <= y_max;
  }
};

inline double intersection_area(const Box& a, const Box& b) {
  const double w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const double h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  return w > 0 && h > 0 ? w * h : 0;
}

// 0 for disjoint boxes and for two empty ones (no 0/0).
inline double iou(const Box& a, const Box& b) {
  const double inter = intersection_area(a, b);
  if (inter <= 0) return 0;
  const double uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

}  // namespace torchinfer
