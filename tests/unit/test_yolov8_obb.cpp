// The yolov8-obb decoder and rotated NMS on hand-made tensors whose answers
// are known exactly (float64 tensors: no float rounding in the expected
// values), and on hostile ones.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "common/model_config.h"
#include "decode/containment.h"
#include "decode/detection.h"
#include "decode/yolov8_obb.h"

using namespace torchinfer;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = RotatedBox::kPi;

// [1, 4 + C + 1, A] float64 from anchor rows (cx, cy, w, h, scores..., angle).
struct Obb {
  std::vector<double> values;
  TensorView view;
  explicit Obb(const std::vector<std::vector<double>>& rows, std::int64_t channels = 0) {
    const std::int64_t a = static_cast<std::int64_t>(rows.size());
    const std::int64_t ch = channels ? channels : static_cast<std::int64_t>(rows.at(0).size());
    values.assign(static_cast<std::size_t>(ch * a), 0.0);
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t c = 0; c < ch; ++c) values[c * a + i] = rows[i][c];
    view.name = "output0";
    view.dtype = DType::kFloat64;
    view.dims = {1, ch, a};
    view.data = values.data();
    view.bytes = values.size() * sizeof(double);
  }
};

FrameMapping identity(int w = 640, int h = 640) {
  FrameMapping m;
  m.frame_width = m.input_width = w;
  m.frame_height = m.input_height = h;
  return m;
}

std::vector<Detection> run(const Obb& t, const DetectionOptions& o = {},
                           const FrameMapping& m = identity(), ObbCounts* counts = nullptr) {
  return decode_yolov8_obb({t.view}, o, m, counts);
}

void expect_rotated(const Detection& d, double cx, double cy, double w, double h, double angle) {
  ASSERT_TRUE(d.rotated.has_value());
  EXPECT_NEAR(d.rotated->cx, cx, 1e-9);
  EXPECT_NEAR(d.rotated->cy, cy, 1e-9);
  EXPECT_NEAR(d.rotated->width, w, 1e-9);
  EXPECT_NEAR(d.rotated->height, h, 1e-9);
  EXPECT_NEAR(d.rotated->angle, angle, 1e-9);
}

void expect_layout_error(const Obb& t, const std::string& part, DetectionOptions o = {}) {
  try {
    run(t, o);
    FAIL() << "no error for " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStreamData);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("yolov8-obb"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Yolov8Obb, DecodesCentreSizeClassAndAngleInDegreesClockwise) {
  const Obb t({{100, 80, 40, 20, 0.1, 0.9, kPi / 6}, {300, 300, 10, 10, 0.2, 0.1, 0}});
  DetectionOptions o;
  o.labels = {"bracket", "washer"};
  const auto d = run(t, o);
  ASSERT_EQ(d.size(), 1u);  // the second scores 0.2 < 0.25
  EXPECT_EQ(d[0].label_id, 1);
  EXPECT_EQ(d[0].label, "washer");
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.9);
  expect_rotated(d[0], 100, 80, 40, 20, 30);
  // The axis-aligned box is the rotated box's bounds.
  const double hw = (std::cos(kPi / 6) * 40 + std::sin(kPi / 6) * 20) / 2;
  const double hh = (std::sin(kPi / 6) * 40 + std::cos(kPi / 6) * 20) / 2;
  EXPECT_NEAR(d[0].x_min, 100 - hw, 1e-9);
  EXPECT_NEAR(d[0].x_max, 100 + hw, 1e-9);
  EXPECT_NEAR(d[0].y_min, 80 - hh, 1e-9);
  EXPECT_NEAR(d[0].y_max, 80 + hh, 1e-9);
}

TEST(Yolov8Obb, AnglesAreBroughtIntoMinus90To90) {
  const std::vector<std::pair<double, double>> cases = {
      {2 * kPi / 3, -60}, {kPi / 2, -90},  {-kPi / 2, -90},          {-3 * kPi / 4, 45},
      {7 * kPi, 0},       {-kPi / 4, -45}, {100 * kPi + kPi / 3, 60}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto d = run(Obb({{320, 320, 40, 20, 0.9, cases[i].first}}));
    ASSERT_EQ(d.size(), 1u) << i;
    EXPECT_NEAR(d[0].rotated->angle, cases[i].second, 1e-9) << i;
    EXPECT_DOUBLE_EQ(d[0].rotated->width, 40) << i;  // never swapped
  }
  EXPECT_DOUBLE_EQ(normalize_angle_degrees(90), -90);
  EXPECT_DOUBLE_EQ(normalize_angle_degrees(-90), -90);
  EXPECT_DOUBLE_EQ(normalize_angle_degrees(270), -90);
  EXPECT_DOUBLE_EQ(normalize_angle_degrees(89.5), 89.5);
  EXPECT_TRUE(std::isnan(normalize_angle_degrees(kNaN)));
}

TEST(Yolov8Obb, RotatedIouOfKnownShapes) {
  const RotatedBox sq{0, 0, 10, 10, 0};
  EXPECT_NEAR(rotated_iou(sq, sq), 1, 1e-12);
  EXPECT_NEAR(rotated_iou(sq, {0, 0, 10, 10, -90}), 1, 1e-12);
  // A square and itself turned 45 degrees: a regular octagon, IoU 1/sqrt(2).
  EXPECT_NEAR(rotated_iou(sq, {0, 0, 10, 10, 45}), std::sqrt(0.5), 1e-12);
  // A cross: 100x20 and 20x100: 400 / 3600.
  EXPECT_NEAR(rotated_iou({0, 0, 100, 20, 0}, {0, 0, 100, 20, 90 - 180}), 400.0 / 3600, 1e-12);
  EXPECT_EQ(rotated_iou(sq, {20, 0, 10, 10, 0}), 0);
  EXPECT_EQ(rotated_iou(sq, {0, 0, 0, 10, 0}), 0);
  EXPECT_EQ(rotated_iou(sq, {kNaN, 0, 10, 10, 0}), 0);
  EXPECT_EQ(rotated_iou(sq, {0, 0, 10, 10, kInf}), 0);
}

TEST(Yolov8Obb, NmsUsesTheRotatedOverlapNotTheAxisAlignedOne) {
  // Three 100x20 bars at 45 degrees: the second lies 10 px further along the
  // first's long axis (IoU 1800/2200, suppressed); the third is parallel,
  // 22 px across (2 px apart: kept, though the axis-aligned boxes around
  // the first and the third overlap by 0.5, which axis-aligned NMS at the
  // default 0.45 would suppress).
  const double a = kPi / 4, along = 10 / std::sqrt(2.0), across = 22 / std::sqrt(2.0);
  const Obb t({{300, 300, 100, 20, 0.9, a},
               {300 + along, 300 + along, 100, 20, 0.8, a},
               {300 - across, 300 + across, 100, 20, 0.7, a}});
  const auto d = run(t);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.9);
  EXPECT_DOUBLE_EQ(d[1].confidence, 0.7);
  EXPECT_GT(iou(d[0].box(), d[1].box()), 0.45);
  EXPECT_NEAR(rotated_iou({300, 300, 100, 20, 45}, {300 + along, 300 + along, 100, 20, 45}),
              1800.0 / 2200, 1e-12);
}

TEST(Yolov8Obb, PerClassUnlessClassAgnostic) {
  const Obb t({{300, 300, 100, 20, 0.9, 0, 0.3}, {300, 300, 100, 20, 0, 0.8, 0.3}});
  EXPECT_EQ(run(t).size(), 2u);
  DetectionOptions o;
  o.class_agnostic = true;
  const auto d = run(t, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].label_id, 0);
}

TEST(Yolov8Obb, LetterboxMapsBackExactly) {
  FrameMapping m = identity();
  m.frame_width = 1280, m.frame_height = 1120;  // model 640x640: scale 0.5, 40 px pad top
  m.scale_x = m.scale_y = 0.5, m.offset_y = 40;
  const auto d = run(Obb({{100, 120, 40, 20, 0.9, kPi / 6}}), {}, m);
  ASSERT_EQ(d.size(), 1u);
  expect_rotated(d[0], 200, 160, 80, 40, 30);
}

TEST(Yolov8Obb, StretchMapsTheWidthAxisAndKeepsTheArea) {
  FrameMapping m = identity();
  m.frame_width = 1280, m.frame_height = 2560;
  m.scale_x = 0.5, m.scale_y = 0.25;
  // At 0 and 90 degrees a stretched rectangle is a rectangle: exact.
  auto d = run(Obb({{50, 50, 40, 10, 0.9, 0}}), {}, m);
  expect_rotated(d.at(0), 100, 200, 80, 40, 0);
  d = run(Obb({{50, 50, 40, 10, 0.9, kPi / 2}}), {}, m);
  expect_rotated(d.at(0), 100, 200, 160, 20, -90);
  // At 45 degrees: the width axis (20, 20)*sqrt(2)... -> (40, 80)*sqrt(2).
  d = run(Obb({{50, 50, 40, 10, 0.9, kPi / 4}}), {}, m);
  const double w = std::hypot(40 * std::sqrt(0.5) / 0.5, 40 * std::sqrt(0.5) / 0.25);
  expect_rotated(d.at(0), 100, 200, w, 40 * 10 / (0.5 * 0.25) / w,
                 std::atan2(2.0, 1.0) * 180 / kPi);
}

TEST(Yolov8Obb, WhollyOutsideTheFrameIsDropped) {
  FrameMapping m = identity();
  m.frame_height = 320, m.scale_x = m.scale_y = 0.5;
  m.frame_width = 1280, m.frame_height = 640, m.offset_y = 160;  // pad 160 top and bottom
  const auto d = run(Obb({{100, 40, 20, 10, 0.9, 0.2}, {100, 300, 20, 10, 0.8, 0.2}}), {}, m);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.8);
}

TEST(Yolov8ObbHostile, NonFiniteAndEmptyBoxesAreCountedNotKept) {
  const Obb t({{100, 100, 20, 10, 0.9, kNaN},
               {200, 100, 20, 10, 0.9, kInf},
               {300, 100, 20, 10, 0.9, -kInf},
               {kNaN, 100, 20, 10, 0.9, 0},
               {400, 100, 0, 10, 0.9, 0},
               {500, 100, 20, -3, 0.9, 0},
               {100, 500, kInf, 10, 0.9, 0},
               {200, 500, 20, 10, 0.1, kNaN},  // below the threshold: not counted
               {300, 500, 20, 10, 0.5, 1e30},  // huge but finite: a box
               {400, 500, 20, 10, kNaN, 0}});  // NaN score never wins
  ObbCounts counts;
  const auto d = run(t, {}, identity(), &counts);
  EXPECT_EQ(counts.invalid, 7u);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.5);
  EXPECT_GE(d[0].rotated->angle, -90);
  EXPECT_LT(d[0].rotated->angle, 90);
}

TEST(Yolov8ObbHostile, WrongLayoutsAreClearErrors) {
  expect_layout_error(Obb({{1, 2, 3, 4, 0.5}}), "[1, 5, 1]");  // no class
  expect_layout_error(Obb({{1, 2, 3, 4, 0.5, 0.1, 0.2}}), "3 classes (the labels), so 8", [] {
    DetectionOptions o;
    o.labels = {"a", "b", "c"};
    return o;
  }());
  Obb ints({{1, 2, 3, 4, 0.5, 0.1}});
  ints.view.dtype = DType::kInt32;
  expect_layout_error(ints, "int32");
  Obb flat({{1, 2, 3, 4, 0.5, 0.1}});
  flat.view.dims = {6};
  expect_layout_error(flat, "[6]");
  Obb short_data({{1, 2, 3, 4, 0.5, 0.1}});
  short_data.view.bytes = 8;
  expect_layout_error(short_data, "float64");
  EXPECT_THROW(decode_yolov8_obb({}, {}, identity()), Error);
  FrameMapping bad = identity();
  bad.scale_x = kNaN;
  EXPECT_THROW(run(Obb({{1, 2, 3, 4, 0.5, 0.1}}), {}, bad), Error);
  // Through the common entry point too.
  EXPECT_THROW(check_detection_layout(Decoder::kYolov8Obb, {Obb({{1, 2, 3, 4, 0.5}}).view}), Error);
}

TEST(Yolov8ObbHostile, EightyFourHundredIdenticalCandidatesLeaveOnePerClass) {
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 8400; ++i)
    rows.push_back(
        {320, 320, 100, 40, i % 3 == 0 ? 0.9 : 0, i % 3 == 1 ? 0.8 : 0, i % 3 == 2 ? 0.7 : 0, 0.5});
  const Obb t(rows);
  auto d = run(t);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].label_id, 0);
  EXPECT_EQ(d[1].label_id, 1);
  EXPECT_EQ(d[2].label_id, 2);
  DetectionOptions o;
  o.class_agnostic = true;
  EXPECT_EQ(run(t, o).size(), 1u);
}

TEST(Yolov8ObbHostile, EightyFourHundredDisjointCandidatesStopAtMaxDetections) {
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 8400; ++i)  // an 84 x 100 grid of 4x4 boxes, 6 px apart
    rows.push_back({3.0 + 6 * (i % 100), 3.0 + 6 * (i / 100), 4, 4, 0.3 + 0.5 * i / 8400, 0.1});
  const auto d = run(Obb(rows));
  ASSERT_EQ(d.size(), 100u);
  for (std::size_t i = 0; i < d.size(); ++i)  // the last 100 anchors, best first
    EXPECT_DOUBLE_EQ(d[i].confidence, 0.3 + 0.5 * (8399 - static_cast<int>(i)) / 8400) << i;
}

TEST(Yolov8Obb, ContainmentComparesRotatedOutlines) {
  // A small bar beside a long diagonal bar: inside its bounds, outside it.
  Detection big, small;
  big.label_id = small.label_id = 0;
  big.rotated = RotatedBox{100, 100, 200, 20, 45};
  const Box bb = big.rotated->bounds();
  big.x_min = bb.x_min, big.y_min = bb.y_min, big.x_max = bb.x_max, big.y_max = bb.y_max;
  small.rotated = RotatedBox{140, 60, 20, 10, 0};
  small.x_min = 130, small.y_min = 55, small.x_max = 150, small.y_max = 65;
  std::vector<Detection> dets{big, small};
  EXPECT_EQ(suppress_contained(dets, 0.9), 0u);
  EXPECT_EQ(dets.size(), 2u);
  // On the bar itself it goes.
  small.rotated = RotatedBox{110, 110, 20, 10, 45};
  dets = {big, small};
  EXPECT_EQ(suppress_contained(dets, 0.9), 1u);
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_DOUBLE_EQ(dets[0].rotated->width, 200);
  EXPECT_NEAR(rotated_intersection_area({0, 0, 10, 10, 0}, {5, 5, 10, 10, 0}), 25, 1e-9);
}

TEST(Yolov8Obb, SidecarNamesTheDecoder) {
  const ModelConfig c = parse_model_config_text(R"({"decoder": "yolov8-obb"})", "m.json");
  ASSERT_TRUE(c.decoder.has_value());
  EXPECT_EQ(*c.decoder, Decoder::kYolov8Obb);
  EXPECT_STREQ(to_string(Decoder::kYolov8Obb), "yolov8-obb");
  // decode_detections dispatches to it.
  const Obb t({{100, 80, 40, 20, 0.9, kPi / 6}});
  const auto d = decode_detections(Decoder::kYolov8Obb, {t.view}, {}, identity());
  ASSERT_EQ(d.size(), 1u);
  expect_rotated(d[0], 100, 80, 40, 20, 30);
}
