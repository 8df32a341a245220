#include "decode/yolov8_obb.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.h"
#include "decode/tensor_read.h"

namespace torchinfer {
namespace {

using Point = std::array<double, 2>;
using Polygon = std::vector<Point>;

using tensor_read::frame_dims;  // [channels, anchors], batch of 1 or not
using tensor_read::is_float;
using tensor_read::value;

[[noreturn]] void layout_error(const std::string& expected,
                               const std::vector<TensorView>& outputs) {
  std::string found = outputs.empty() ? "no output tensors" : "";
  for (const auto& t : outputs)
    found += (found.empty() ? "'" : ", '") + t.name + "' " + describe(t);
  throw Error(ErrorKind::kStreamData,
              "decoder yolov8-obb expects " + expected + "; the model gives " + found);
}

double cross(const Point& o, const Point& a, const Point& b) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

double polygon_area(const Polygon& p) {
  double s = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Point& a = p[i];
    const Point& b = p[(i + 1) % p.size()];
    s += a[0] * b[1] - a[1] * b[0];
  }
  return std::abs(s) / 2;
}

// Sutherland-Hodgman: the part of convex `subject` inside convex `clip`
// (clip's corners in either orientation).
Polygon clip_convex(Polygon subject, const std::array<Point, 4>& clip) {
  double orient = 0;
  for (int i = 0; i < 4; ++i) orient += cross(clip[0], clip[i], clip[(i + 1) % 4]);
  const double sign = orient >= 0 ? 1 : -1;
  for (int e = 0; e < 4 && !subject.empty(); ++e) {
    const Point &a = clip[e], &b = clip[(e + 1) % 4];
    Polygon out;
    for (std::size_t i = 0; i < subject.size(); ++i) {
      const Point &p = subject[i], &q = subject[(i + 1) % subject.size()];
      const double dp = sign * cross(a, b, p), dq = sign * cross(a, b, q);
      if (dp >= 0) out.push_back(p);
      if ((dp >= 0) != (dq >= 0)) {
        const double t = dp / (dp - dq);
        out.push_back({p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])});
      }
    }
    subject = std::move(out);
  }
  return subject;
}

bool overlaps(const Box& a, const Box& b) {
  return a.x_min < b.x_max && b.x_min < a.x_max && a.y_min < b.y_max && b.y_min < a.y_max;
}

struct Candidate {
  RotatedBox box;  // model-input pixels
  Box bounds;      // its axis-aligned bounds, for the cheap overlap test
  int class_id;
  double score;
};

// Best class per anchor, threshold, and the geometry check (counted).
std::vector<Candidate> candidates(const TensorView& t, double threshold, ObbCounts& counts) {
  const auto d = frame_dims(t);
  const std::int64_t channels = d[0], anchors = d[1];
  const int classes = static_cast<int>(channels - 5);
  auto at = [&](std::int64_t ch, std::int64_t a) {
    return value(t, static_cast<std::size_t>(ch * anchors + a));
  };
  std::vector<Candidate> out;
  for (std::int64_t a = 0; a < anchors; ++a) {
    int cls = -1;
    double best = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < classes; ++k)
      if (const double s = at(4 + k, a); s > best) cls = k, best = s;
    if (cls < 0 || !std::isfinite(best) || best < threshold || !(best > 0)) continue;
    const double cx = at(0, a), cy = at(1, a), w = at(2, a), h = at(3, a);
    const double rad = at(channels - 1, a);
    if (!std::isfinite(cx) || !std::isfinite(cy) || !std::isfinite(w) || !std::isfinite(h) ||
        !std::isfinite(rad) || !(w > 0) || !(h > 0)) {
      ++counts.invalid;
      continue;
    }
    RotatedBox r{cx, cy, w, h, normalize_angle_degrees(rad * 180 / RotatedBox::kPi)};
    out.push_back({r, r.bounds(), cls, best});
  }
  return out;
}

Detection to_detection(const Candidate& c, const DetectionOptions& o, const FrameMapping& m) {
  Detection d;
  d.rotated = map_rotated_to_frame(c.box, m);
  const Box b = d.rotated->bounds();
  d.x_min = std::clamp(b.x_min, 0.0, static_cast<double>(m.frame_width));
  d.y_min = std::clamp(b.y_min, 0.0, static_cast<double>(m.frame_height));
  d.x_max = std::clamp(b.x_max, 0.0, static_cast<double>(m.frame_width));
  d.y_max = std::clamp(b.y_max, 0.0, static_cast<double>(m.frame_height));
  d.label_id = c.class_id;
  d.label = static_cast<std::size_t>(d.label_id) < o.labels.size() ? o.labels[d.label_id]
                                                                   : std::to_string(d.label_id);
  d.confidence = c.score;
  return d;
}

}  // namespace

double rotated_intersection_area(const RotatedBox& a, const RotatedBox& b) {
  for (const RotatedBox* r : {&a, &b})
    if (!std::isfinite(r->cx) || !std::isfinite(r->cy) || !std::isfinite(r->angle) ||
        !(r->width > 0) || !(r->height > 0) || !std::isfinite(r->area()))
      return 0;
  const auto ca = a.corners(), cb = b.corners();
  return polygon_area(clip_convex(Polygon(ca.begin(), ca.end()), cb));
}

double rotated_iou(const RotatedBox& a, const RotatedBox& b) {
  const double inter = rotated_intersection_area(a, b);
  const double uni = a.area() + b.area() - inter;
  return inter > 0 && uni > 0 ? std::min(1.0, inter / uni) : 0;
}

RotatedBox map_rotated_to_frame(const RotatedBox& r, const FrameMapping& m) {
  const double rad = r.angle * RotatedBox::kPi / 180;
  // The width and height axes, mapped through diag(1/scale_x, 1/scale_y).
  const double ux = std::cos(rad) * r.width / m.scale_x, uy = std::sin(rad) * r.width / m.scale_y;
  const double vx = -std::sin(rad) * r.height / m.scale_x,
               vy = std::cos(rad) * r.height / m.scale_y;
  RotatedBox f;
  f.cx = (r.cx - m.offset_x) / m.scale_x;
  f.cy = (r.cy - m.offset_y) / m.scale_y;
  f.width = std::hypot(ux, uy);
  f.height = f.width > 0 ? std::abs(ux * vy - uy * vx) / f.width : 0;
  f.angle = normalize_angle_degrees(std::atan2(uy, ux) * 180 / RotatedBox::kPi);
  return f;
}

void check_obb_layout(const std::vector<TensorView>& outputs, std::size_t labels) {
  const std::string want =
      "a float tensor [1, 4 + classes + 1, anchors] (cx, cy, w, h, class scores, angle in "
      "radians)";
  if (outputs.empty() || !is_float(outputs[0])) layout_error(want, outputs);
  const auto d = frame_dims(outputs[0]);
  if (d.size() != 2 || d[0] < 6) layout_error(want, outputs);
  if (labels > 0 && d[0] != static_cast<std::int64_t>(labels) + 5)
    layout_error(want + " with " + std::to_string(labels) + " classes (the labels), so " +
                     std::to_string(labels + 5) + " channels",
                 outputs);
}

std::vector<Detection> decode_yolov8_obb(const std::vector<TensorView>& outputs,
                                         const DetectionOptions& o, const FrameMapping& m,
                                         ObbCounts* counts) {
  check_obb_layout(outputs, o.labels.size());
  if (!(m.scale_x > 0) || !(m.scale_y > 0) || m.frame_width < 1 || m.frame_height < 1)
    throw Error(ErrorKind::kStreamData, "invalid frame-to-model transform");
  ObbCounts local;
  std::vector<Candidate> c = candidates(outputs[0], o.confidence_threshold, local);
  if (counts) counts->invalid += local.invalid;
  std::vector<std::size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return c[x].score > c[y].score; });
  std::vector<std::size_t> kept;
  std::vector<Detection> out;
  const Box frame{0, 0, static_cast<double>(m.frame_width), static_cast<double>(m.frame_height)};
  for (std::size_t i : order) {
    if (static_cast<int>(out.size()) >= o.max_detections) break;
    bool suppressed = false;
    for (std::size_t k : kept) {
      if (!o.class_agnostic && c[k].class_id != c[i].class_id) continue;
      if (!overlaps(c[k].bounds, c[i].bounds)) continue;
      if (rotated_iou(c[k].box, c[i].box) > o.iou_threshold) {
        suppressed = true;
        break;
      }
    }
    if (suppressed) continue;
    kept.push_back(i);
    Detection d = to_detection(c[i], o, m);
    if (!overlaps(d.rotated->bounds(), frame)) continue;  // wholly in the padding
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace torchinfer
