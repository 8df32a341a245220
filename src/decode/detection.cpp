#include "decode/detection.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <opencv2/dnn.hpp>

#include "common/error.h"
#include "decode/tensor_read.h"
#include "decode/yolov8_obb.h"
#include "decode/yolov8_seg.h"

namespace torchinfer {
namespace {

// Candidates in model-input pixels, before NMS.
struct Candidates {
  std::vector<cv::Rect2d> boxes;  // for NMS
  std::vector<float> scores;      // for NMS, which takes floats
  std::vector<int> class_ids;
  // The exact values, so the results carry no float rounding.
  std::vector<std::array<double, 4>> corners;  // x_min, y_min, x_max, y_max
  std::vector<double> exact_scores;
  std::vector<long long> anchors;  // index in the model output
};

using tensor_read::frame_dims;
using tensor_read::is_float;

// Reads element i of a float32/float64 tensor as double.
struct Values {
  const TensorView& t;
  double operator[](std::size_t i) const { return tensor_read::value(t, i); }
};

std::string describe_all(const std::vector<TensorView>& outputs) {
  if (outputs.empty()) return "no output tensors";
  std::string s;
  for (const auto& t : outputs) s += (s.empty() ? "'" : ", '") + t.name + "' " + describe(t);
  return s;
}

[[noreturn]] void layout_error(Decoder d, const char* expected,
                               const std::vector<TensorView>& outputs) {
  throw Error(ErrorKind::kStreamData, std::string("decoder ") + to_string(d) + " expects " +
                                          expected + "; the model gives " + describe_all(outputs));
}

// SSD: tensors named boxes/scores, else the first two outputs.
std::pair<const TensorView*, const TensorView*> ssd_tensors(
    const std::vector<TensorView>& outputs) {
  const TensorView *boxes = nullptr, *scores = nullptr;
  for (const auto& t : outputs) {
    if (t.name == "boxes") boxes = &t;
    if (t.name == "scores") scores = &t;
  }
  if ((!boxes || !scores) && outputs.size() >= 2) {
    boxes = &outputs[0];
    scores = &outputs[1];
  }
  return {boxes, scores};
}

bool valid_box(double x, double y, double w, double h) {
  return std::isfinite(x) && std::isfinite(y) && std::isfinite(w) && std::isfinite(h) && w > 0 &&
         h > 0;
}

// Best class of one anchor; NaN scores never win and ties keep the lower id.
template <typename Score>
std::pair<int, double> best_class(int n, Score score) {
  int best = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int c = 0; c < n; ++c) {
    const double s = score(c);
    if (s > best_score) best = c, best_score = s;
  }
  return {best, best_score};
}

void add(Candidates& c, std::array<double, 4> corners, int cls, double score, double threshold,
         long long anchor = -1) {
  const double w = corners[2] - corners[0], h = corners[3] - corners[1];
  if (cls < 0 || !std::isfinite(score) || score < threshold || !(score > 0) ||
      !valid_box(corners[0], corners[1], w, h))
    return;
  c.boxes.emplace_back(corners[0], corners[1], w, h);
  c.scores.push_back(static_cast<float>(score));
  c.class_ids.push_back(cls);
  c.corners.push_back(corners);
  c.exact_scores.push_back(score);
  c.anchors.push_back(anchor);
}

// Centre/size to corners.
std::array<double, 4> from_centre(double cx, double cy, double w, double h) {
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

Candidates decode_yolov5(const TensorView& t, double threshold) {
  const auto d = frame_dims(t);
  const std::int64_t anchors = d[0], stride = d[1];
  const int classes = static_cast<int>(stride - 5);
  const Values v{t};
  Candidates c;
  for (std::int64_t a = 0; a < anchors; ++a) {
    const std::size_t row = static_cast<std::size_t>(a * stride);
    const double obj = v[row + 4];
    if (!(obj >= threshold)) continue;  // score = obj * cls <= obj for cls <= 1
    auto [cls, s] = best_class(classes, [&](int k) { return obj * v[row + 5 + k]; });
    add(c, from_centre(v[row], v[row + 1], v[row + 2], v[row + 3]), cls, s, threshold);
  }
  return c;
}

// classes: the class channels after the box (yolov8-seg's head has mask
// coefficients after them); -1 = all the rest.
Candidates decode_yolov8(const TensorView& t, double threshold, int classes = -1) {
  const auto d = frame_dims(t);
  const std::int64_t channels = d[0], anchors = d[1];
  if (classes < 0) classes = static_cast<int>(channels - 4);
  const Values v{t};
  auto at = [&](std::int64_t ch, std::int64_t a) {
    return v[static_cast<std::size_t>(ch * anchors + a)];
  };
  Candidates c;
  for (std::int64_t a = 0; a < anchors; ++a) {
    auto [cls, s] = best_class(classes, [&](int k) { return at(4 + k, a); });
    add(c, from_centre(at(0, a), at(1, a), at(2, a), at(3, a)), cls, s, threshold, a);
  }
  return c;
}

Candidates decode_ssd(const TensorView& boxes, const TensorView& scores, double threshold,
                      const FrameMapping& m) {
  const auto bd = frame_dims(boxes), sd = frame_dims(scores);
  const std::int64_t anchors = bd[0], classes = sd[1];
  const Values b{boxes}, s{scores};
  Candidates c;
  for (std::int64_t a = 0; a < anchors; ++a) {
    auto [cls, score] = best_class(static_cast<int>(classes - 1), [&](int k) {
      return s[static_cast<std::size_t>(a * classes + 1 + k)];
    });
    const std::size_t r = static_cast<std::size_t>(a * 4);
    add(c,
        {b[r] * m.input_width, b[r + 1] * m.input_height, b[r + 2] * m.input_width,
         b[r + 3] * m.input_height},
        cls, score, threshold);
  }
  return c;
}

// Per-class NMS the way OpenCV 4.7's NMSBoxesBatched does it (Debian's 4.6
// lacks it): shift each class to its own region so boxes of different classes
// never overlap, then one NMSBoxes.
std::vector<int> run_nms(const Candidates& c, const DetectionOptions& o) {
  std::vector<int> keep;
  if (c.boxes.empty()) return keep;
  // Scores were filtered already and are > 0; NMSBoxes keeps score > 0.
  const float any = 0.f;
  if (o.class_agnostic) {
    cv::dnn::NMSBoxes(c.boxes, c.scores, any, static_cast<float>(o.iou_threshold), keep);
    return keep;
  }
  double extent = 0;
  for (const auto& b : c.boxes)
    extent =
        std::max({extent, std::abs(b.x), std::abs(b.y), std::abs(b.br().x), std::abs(b.br().y)});
  std::vector<cv::Rect2d> shifted(c.boxes);
  for (std::size_t i = 0; i < shifted.size(); ++i) {
    const double off = c.class_ids[i] * (2 * extent + 1);
    shifted[i].x += off;
    shifted[i].y += off;
  }
  cv::dnn::NMSBoxes(shifted, c.scores, any, static_cast<float>(o.iou_threshold), keep);
  return keep;
}

}  // namespace

std::string describe(const TensorView& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "] " + to_string(t.dtype);
}

void check_detection_layout(Decoder decoder, const std::vector<TensorView>& outputs) {
  switch (decoder) {
    case Decoder::kYolov5: {
      const char* want =
          "a float tensor [1, anchors, 5 + classes] (cx, cy, w, h, objectness, "
          "class scores)";
      if (outputs.empty() || !is_float(outputs[0])) layout_error(decoder, want, outputs);
      const auto d = frame_dims(outputs[0]);
      if (d.size() != 2 || d[1] < 6) layout_error(decoder, want, outputs);
      return;
    }
    case Decoder::kYolov8: {
      const char* want = "a float tensor [1, 4 + classes, anchors] (cx, cy, w, h, class scores)";
      if (outputs.empty() || !is_float(outputs[0])) layout_error(decoder, want, outputs);
      const auto d = frame_dims(outputs[0]);
      if (d.size() != 2 || d[0] < 5) layout_error(decoder, want, outputs);
      return;
    }
    case Decoder::kSsd: {
      const char* want =
          "two float tensors, boxes [1, anchors, 4] (x_min, y_min, x_max, y_max in 0..1) and "
          "scores [1, anchors, classes] with class 0 = background";
      auto [boxes, scores] = ssd_tensors(outputs);
      if (!boxes || !scores || !is_float(*boxes) || !is_float(*scores))
        layout_error(decoder, want, outputs);
      const auto bd = frame_dims(*boxes), sd = frame_dims(*scores);
      if (bd.size() != 2 || bd[1] != 4 || sd.size() != 2 || sd[0] != bd[0] || sd[1] < 2)
        layout_error(decoder, want, outputs);
      return;
    }
    case Decoder::kClassification:
      throw Error(ErrorKind::kStreamData, "decoder classification gives class scores, not boxes");
    case Decoder::kYolov8Seg:
      segment_tensors(outputs);
      return;
    case Decoder::kYolov8Obb:
      return check_obb_layout(outputs);
  }
}

std::vector<Detection> decode_detections(Decoder decoder, const std::vector<TensorView>& outputs,
                                         const DetectionOptions& o, const FrameMapping& m) {
  if (decoder == Decoder::kYolov8Obb) return decode_yolov8_obb(outputs, o, m);
  check_detection_layout(decoder, outputs);
  if (!(m.scale_x > 0) || !(m.scale_y > 0) || m.frame_width < 1 || m.frame_height < 1)
    throw Error(ErrorKind::kStreamData, "invalid frame-to-model transform");
  Candidates c;
  switch (decoder) {
    case Decoder::kYolov5:
      c = decode_yolov5(outputs[0], o.confidence_threshold);
      break;
    case Decoder::kYolov8:
      c = decode_yolov8(outputs[0], o.confidence_threshold);
      break;
    case Decoder::kSsd: {
      auto [boxes, scores] = ssd_tensors(outputs);
      c = decode_ssd(*boxes, *scores, o.confidence_threshold, m);
      break;
    }
    case Decoder::kClassification:
      break;  // rejected by check_detection_layout
    case Decoder::kYolov8Seg: {
      const SegmentTensors s = segment_tensors(outputs, o.labels.size());
      c = decode_yolov8(*s.head, o.confidence_threshold, s.classes);
      break;
    }
    case Decoder::kYolov8Obb:
      break;  // decoded above
  }
  std::vector<Detection> out;
  for (int i : run_nms(c, o)) {
    if (static_cast<int>(out.size()) >= o.max_detections) break;
    const auto& b = c.corners[i];
    const double fw = m.frame_width, fh = m.frame_height;
    Detection d;
    d.x_min = std::clamp((b[0] - m.offset_x) / m.scale_x, 0.0, fw);
    d.y_min = std::clamp((b[1] - m.offset_y) / m.scale_y, 0.0, fh);
    d.x_max = std::clamp((b[2] - m.offset_x) / m.scale_x, 0.0, fw);
    d.y_max = std::clamp((b[3] - m.offset_y) / m.scale_y, 0.0, fh);
    if (!(d.x_max > d.x_min) || !(d.y_max > d.y_min)) continue;  // wholly in the padding
    d.label_id = c.class_ids[i];
    d.label = static_cast<std::size_t>(d.label_id) < o.labels.size() ? o.labels[d.label_id]
                                                                     : std::to_string(d.label_id);
    d.confidence = c.exact_scores[i];
    d.anchor = c.anchors[i];
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace torchinfer
