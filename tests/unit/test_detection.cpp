// Detection decoders on hand-made tensors whose answers are known exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "decode/detection.h"

using namespace torchinfer;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Owns the values a TensorView points at.
struct Tensor {
  std::vector<float> values;
  TensorView view;
  Tensor(std::string name, std::vector<std::int64_t> dims, std::vector<double> v)
      : values(v.begin(), v.end()) {
    view.name = std::move(name);
    view.dims = std::move(dims);
    view.data = values.data();
    view.bytes = values.size() * sizeof(float);
  }
};

// YOLOv5 rows: cx, cy, w, h, objectness, class scores.
Tensor yolov5(const std::vector<std::vector<double>>& rows) {
  std::vector<double> v;
  for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
  const std::int64_t stride = rows.empty() ? 8 : static_cast<std::int64_t>(rows[0].size());
  return Tensor("output", {1, static_cast<std::int64_t>(rows.size()), stride}, v);
}

FrameMapping identity(int w = 320, int h = 256) {
  FrameMapping m;
  m.frame_width = m.input_width = w;
  m.frame_height = m.input_height = h;
  return m;
}

std::vector<Detection> run(const Tensor& t, const DetectionOptions& o = {},
                           const FrameMapping& m = identity(), Decoder d = Decoder::kYolov5) {
  return decode_detections(d, {t.view}, o, m);
}

void expect_box(const Detection& d, double x0, double y0, double x1, double y1) {
  EXPECT_DOUBLE_EQ(d.x_min, x0);
  EXPECT_DOUBLE_EQ(d.y_min, y0);
  EXPECT_DOUBLE_EQ(d.x_max, x1);
  EXPECT_DOUBLE_EQ(d.y_max, y1);
}

}  // namespace

TEST(Yolov5, OverlappingBoxOfTheSameClassIsSuppressed) {
  const Tensor t = yolov5({
      {100, 100, 40, 40, 0.9, 1, 0, 0},    // kept: best
      {102, 100, 40, 40, 0.8, 1, 0, 0},    // IoU 0.905 with the first: suppressed
      {200, 150, 20, 10, 0.5, 0, 0.5, 0},  // score 0.25, apart: kept
  });
  const auto d = run(t);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].label_id, 0);
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.9f * 1.0);
  expect_box(d[0], 80, 80, 120, 120);
  EXPECT_EQ(d[1].label_id, 1);
  EXPECT_DOUBLE_EQ(d[1].confidence, 0.25);
  expect_box(d[1], 190, 145, 210, 155);
}

TEST(Yolov5, ScoreIsObjectnessTimesBestClass) {
  const auto d = run(yolov5({{50, 50, 10, 10, 0.5, 0.2, 0.6, 0.1}}));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].label_id, 1);
  EXPECT_DOUBLE_EQ(d[0].confidence, double(0.5f) * double(0.6f));
}

TEST(Yolov5, PerClassKeepsOverlapsOfDifferentClassesAgnosticDoesNot) {
  const Tensor t = yolov5({
      {100, 100, 40, 40, 0.9, 1, 0, 0},
      {102, 100, 40, 40, 0.8, 0, 0, 1},  // same place, other class
  });
  const auto per_class = run(t);
  ASSERT_EQ(per_class.size(), 2u);
  EXPECT_EQ(per_class[0].label_id, 0);
  EXPECT_EQ(per_class[1].label_id, 2);
  DetectionOptions o;
  o.class_agnostic = true;
  const auto agnostic = run(t, o);
  ASSERT_EQ(agnostic.size(), 1u);
  EXPECT_EQ(agnostic[0].label_id, 0);
}

TEST(Yolov5, ConfidenceThresholdIsInclusive) {
  const Tensor t = yolov5({{50, 50, 10, 10, 0.5, 0.5, 0, 0}});  // score exactly 0.25
  DetectionOptions o;
  o.confidence_threshold = 0.25;
  EXPECT_EQ(run(t, o).size(), 1u);
  o.confidence_threshold = 0.2500001;
  EXPECT_EQ(run(t, o).size(), 0u);
}

TEST(Yolov5, IouThresholdDecidesSuppression) {
  // [0,0,10,10] and [5,0,15,10]: intersection 50, union 150, IoU 1/3.
  const Tensor t = yolov5({{5, 5, 10, 10, 0.9, 1, 0, 0}, {10, 5, 10, 10, 0.8, 1, 0, 0}});
  DetectionOptions o;
  o.iou_threshold = 0.33;
  EXPECT_EQ(run(t, o).size(), 1u);
  o.iou_threshold = 0.34;
  EXPECT_EQ(run(t, o).size(), 2u);
}

TEST(Yolov5, MaxDetectionsKeepsTheBest) {
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 10; ++i) rows.push_back({15.0 + 30 * i, 20, 10, 10, 0.3 + 0.05 * i, 1, 0, 0});
  DetectionOptions o;
  o.max_detections = 3;
  const auto d = run(yolov5(rows), o);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_DOUBLE_EQ(d[0].x_min, 280);  // anchor 9, the best
  EXPECT_DOUBLE_EQ(d[1].x_min, 250);
  EXPECT_DOUBLE_EQ(d[2].x_min, 220);
  EXPECT_GT(d[0].confidence, d[1].confidence);
  EXPECT_GT(d[1].confidence, d[2].confidence);
  o.max_detections = 100;
  EXPECT_EQ(run(yolov5(rows), o).size(), 10u);
}

TEST(Yolov5, ZeroDetections) {
  EXPECT_TRUE(run(yolov5({{50, 50, 10, 10, 0.1, 1, 0, 0}})).empty());
  EXPECT_TRUE(run(Tensor("output", {1, 0, 8}, {})).empty());
}

TEST(Yolov5, DegenerateBoxesAreDropped) {
  const auto d = run(yolov5({
      {50, 50, 0, 10, 0.9, 1, 0, 0},     // zero width
      {50, 50, 10, -4, 0.9, 1, 0, 0},    // negative height
      {kNaN, 50, 10, 10, 0.9, 1, 0, 0},  // NaN centre
      {50, 50, kInf, 10, 0.9, 1, 0, 0},  // infinite width
      {200, 200, 10, 10, 0.6, 1, 0, 0},  // the only sound one
  }));
  ASSERT_EQ(d.size(), 1u);
  expect_box(d[0], 195, 195, 205, 205);
}

TEST(Yolov5, NonFiniteScoresAreDropped) {
  const auto d = run(yolov5({
      {20, 20, 10, 10, kNaN, 1, 0, 0},       // NaN objectness
      {60, 20, 10, 10, 0.9, kInf, 0, 0},     // infinite class score
      {100, 20, 10, 10, kInf, 1, 0, 0},      // infinite objectness
      {140, 20, 10, 10, 0.9, kNaN, 0.5, 0},  // NaN class never wins: class 1
  }));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].label_id, 1);
  EXPECT_DOUBLE_EQ(d[0].confidence, double(0.9f) * 0.5);
}

TEST(Yolov5, LabelsNameTheClassesAndNumbersPastTheEnd) {
  DetectionOptions o;
  o.labels = {"bolt", "nut"};
  const auto d = run(yolov5({{20, 20, 10, 10, 0.9, 0, 1, 0}, {100, 20, 10, 10, 0.8, 0, 0, 1}}), o);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].label, "nut");
  EXPECT_EQ(d[1].label, "2");
}

TEST(Yolov5, BatchDimensionMayBeOmitted) {
  Tensor t = yolov5({{20, 20, 10, 10, 0.9, 0, 1, 0}});
  t.view.dims = {1, 8};
  ASSERT_EQ(run(t).size(), 1u);
}

TEST(Mapping, StretchNonSquareInputMapsExactly) {
  // 320x256 model, 1280x720 frame stretched: scale 0.25 and 256/720.
  FrameMapping m = identity();
  m.frame_width = 1280;
  m.frame_height = 720;
  m.scale_x = 320.0 / 1280;
  m.scale_y = 256.0 / 720;
  const auto d = run(yolov5({{80, 64, 64, 32, 0.9, 1, 0, 0}}), {}, m);
  ASSERT_EQ(d.size(), 1u);
  expect_box(d[0], 48 / 0.25, 48 / (256.0 / 720), 112 / 0.25, 80 / (256.0 / 720));
  EXPECT_NEAR(d[0].y_min, 135, 1e-9);
  EXPECT_NEAR(d[0].y_max, 225, 1e-9);
}

TEST(Mapping, LetterboxRemovesThePaddingAndClips) {
  // 1280x720 into 320x256 keeping the aspect ratio: scale 0.25, image 320x180
  // at y offset 38.
  FrameMapping m = identity();
  m.frame_width = 1280;
  m.frame_height = 720;
  m.scale_x = m.scale_y = 0.25;
  m.offset_y = 38;
  const auto d = run(yolov5({
                         {80, 68, 80, 40, 0.9, 1, 0, 0},   // inside the image
                         {300, 40, 60, 20, 0.8, 1, 0, 0},  // crosses the top padding and right edge
                         {100, 10, 40, 20, 0.7, 1, 0, 0},  // wholly in the padding: dropped
                     }),
                     {}, m);
  ASSERT_EQ(d.size(), 2u);
  expect_box(d[0], 160, 40, 480, 200);
  expect_box(d[1], 1080, 0, 1280, 48);
}

TEST(Yolov8, TransposedLayoutWithoutObjectness) {
  // Anchors as columns: rows cx, cy, w, h, class 0, class 1.
  const Tensor t("output0", {1, 6, 3},
                 {100, 102, 200,  //
                  100, 100, 150,  //
                  40, 40, 20,     //
                  40, 40, 10,     //
                  0.9, 0.8, 0.1,  //
                  0.1, 0.2, 0.3});
  const auto d = run(t, {}, identity(), Decoder::kYolov8);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].label_id, 0);
  EXPECT_DOUBLE_EQ(d[0].confidence, double(0.9f));
  expect_box(d[0], 80, 80, 120, 120);
  EXPECT_EQ(d[1].label_id, 1);
  EXPECT_DOUBLE_EQ(d[1].confidence, double(0.3f));
  expect_box(d[1], 190, 145, 210, 155);
}

TEST(Ssd, NormalisedCornersAndBackgroundSkipped) {
  const Tensor boxes("boxes", {1, 3, 4},
                     {0.25, 0.25, 0.5, 0.5,  //
                      0.0, 0.0, 1.0, 1.0,    //
                      0.5, 0.5, 0.75, 1.0});
  const Tensor scores("scores", {1, 3, 3},
                      {0.1, 0.7, 0.2,    // class 0 (index 1) 0.7
                       0.9, 0.05, 0.05,  // background wins but is skipped; best real 0.05
                       0.2, 0.3, 0.5});  // class 1 0.5
  DetectionOptions o;
  o.labels = {"a", "b"};
  // Given in the other order: found by name.
  const auto d = decode_detections(Decoder::kSsd, {scores.view, boxes.view}, o, identity());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].label, "a");
  EXPECT_DOUBLE_EQ(d[0].confidence, double(0.7f));
  expect_box(d[0], 80, 64, 160, 128);
  EXPECT_EQ(d[1].label, "b");
  expect_box(d[1], 160, 128, 240, 256);
}

TEST(DetectionErrors, LayoutsThatDoNotFitNameDecoderAndShape) {
  auto expect_error = [](Decoder dec, const std::vector<TensorView>& outs,
                         const std::string& needle) {
    try {
      check_detection_layout(dec, outs);
      FAIL() << "accepted " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kStreamData);
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("decoder ") + to_string(dec)), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  const Tensor classes("output", {1, 5}, {0, 0, 0, 0, 0});
  expect_error(Decoder::kYolov5, {classes.view}, "'output' [1, 5] float32");
  const Tensor narrow("output", {1, 7, 5}, std::vector<double>(35, 0));
  expect_error(Decoder::kYolov5, {narrow.view}, "[1, 7, 5]");
  const Tensor four_d("output", {1, 2, 3, 8}, std::vector<double>(48, 0));
  expect_error(Decoder::kYolov5, {four_d.view}, "[1, 2, 3, 8]");
  expect_error(Decoder::kYolov8, {classes.view}, "[1, 5]");
  expect_error(Decoder::kYolov5, {}, "no output tensors");
  Tensor ints("output", {1, 2, 8}, std::vector<double>(16, 0));
  ints.view.dtype = DType::kInt32;
  expect_error(Decoder::kYolov5, {ints.view}, "int32");
  Tensor short_data("output", {1, 2, 8}, std::vector<double>(8, 0));
  expect_error(Decoder::kYolov5, {short_data.view}, "[1, 2, 8]");
  const Tensor boxes("boxes", {1, 3, 5}, std::vector<double>(15, 0));
  const Tensor scores("scores", {1, 3, 2}, std::vector<double>(6, 0));
  expect_error(Decoder::kSsd, {boxes.view, scores.view}, "[1, 3, 5]");
  expect_error(Decoder::kSsd, {scores.view}, "two float tensors");
  const Tensor boxes4("boxes", {1, 4, 4}, std::vector<double>(16, 0));
  expect_error(Decoder::kSsd, {boxes4.view, scores.view}, "[1, 4, 4]");
  expect_error(Decoder::kClassification, {classes.view}, "not boxes");
  EXPECT_THROW(run(narrow), Error);
}

TEST(DetectionErrors, InvalidMapping) {
  FrameMapping m = identity();
  m.scale_x = 0;
  EXPECT_THROW(run(yolov5({{20, 20, 10, 10, 0.9, 1, 0, 0}}), {}, m), Error);
  m = identity();
  m.frame_width = 0;
  EXPECT_THROW(run(yolov5({{20, 20, 10, 10, 0.9, 1, 0, 0}}), {}, m), Error);
}
