// Constant-velocity Kalman filter of one box, as in SORT (Bewley et al.
// 2016): state (cx, cy, s, r, vcx, vcy, vs) with s = area and r = aspect
// ratio w/h; the aspect ratio is taken as constant. Noise values are SORT's,
// which assume boxes in pixels.
#pragma once

#include <opencv2/video/tracking.hpp>

#include "common/box.h"

namespace torchinfer {

class BoxFilter {
 public:
  explicit BoxFilter(const Box& first);
  // cv::Mat copies share their data: a copy would silently share the state.
  BoxFilter(const BoxFilter&) = delete;
  BoxFilter& operator=(const BoxFilter&) = delete;
  BoxFilter(BoxFilter&&) = default;
  BoxFilter& operator=(BoxFilter&&) = default;
  // Advances one frame; returns the predicted box.
  Box predict();
  // Corrects the state with a measured box.
  void correct(const Box& measured);
  Box box() const;
  // Estimated centre velocity, pixels per frame.
  double velocity_x() const;
  double velocity_y() const;

 private:
  cv::KalmanFilter kf_;
};

}  // namespace torchinfer
