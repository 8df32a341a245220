#include "track/box_filter.h"

#include <algorithm>
#include <cmath>

namespace torchinfer {

namespace {

constexpr int kState = 7, kMeasure = 4;

cv::Mat measurement(const Box& b) {
  const double w = std::max(b.width(), 1e-6), h = std::max(b.height(), 1e-6);
  cv::Mat z(kMeasure, 1, CV_64F);
  z.at<double>(0) = b.x_min + w / 2;
  z.at<double>(1) = b.y_min + h / 2;
  z.at<double>(2) = w * h;
  z.at<double>(3) = w / h;
  return z;
}

Box from_state(const cv::Mat& x) {
  const double cx = x.at<double>(0), cy = x.at<double>(1);
  const double s = std::max(x.at<double>(2), 0.0), r = std::max(x.at<double>(3), 0.0);
  const double w = std::sqrt(s * r);
  const double h = w > 0 ? s / w : 0;
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

}  // namespace

BoxFilter::BoxFilter(const Box& first) : kf_(kState, kMeasure, 0, CV_64F) {
  cv::setIdentity(kf_.transitionMatrix);
  for (int i = 0; i < 3; ++i) kf_.transitionMatrix.at<double>(i, i + 4) = 1;
  cv::setIdentity(kf_.measurementMatrix);
  cv::setIdentity(kf_.measurementNoiseCov);
  kf_.measurementNoiseCov.at<double>(2, 2) = kf_.measurementNoiseCov.at<double>(3, 3) = 10;
  // Velocities start unknown: large initial uncertainty on them.
  cv::setIdentity(kf_.errorCovPost, cv::Scalar(10));
  for (int i = 4; i < kState; ++i) kf_.errorCovPost.at<double>(i, i) = 10000;
  cv::setIdentity(kf_.processNoiseCov);
  for (int i = 4; i < kState; ++i) kf_.processNoiseCov.at<double>(i, i) = 0.01;
  kf_.processNoiseCov.at<double>(6, 6) = 0.0001;
  kf_.statePost.setTo(0);
  measurement(first).copyTo(kf_.statePost.rowRange(0, kMeasure));
}

Box BoxFilter::predict() {
  // A shrinking box must not reach a negative area.
  if (kf_.statePost.at<double>(2) + kf_.statePost.at<double>(6) <= 0)
    kf_.statePost.at<double>(6) = 0;
  // cv::KalmanFilter::predict copies the prediction into statePost, so
  // predicting several frames in a row without a measurement works.
  return from_state(kf_.predict());
}

void BoxFilter::correct(const Box& measured) {
  kf_.correct(measurement(measured));
}

Box BoxFilter::box() const {
  return from_state(kf_.statePost);
}

double BoxFilter::velocity_x() const {
  return kf_.statePost.at<double>(4);
}
double BoxFilter::velocity_y() const {
  return kf_.statePost.at<double>(5);
}

}  // namespace torchinfer
