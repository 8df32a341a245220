// decoder yolov8-seg on hand-made tensors whose masks are worked out by
// hand (decode/yolov8_seg.h gives the sampling rule used below).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "decode/detection.h"
#include "decode/yolov8_seg.h"

using namespace torchinfer;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Owns the values a TensorView points at.
struct Tensor {
  std::vector<float> values;
  TensorView view;
  Tensor(std::string name, std::vector<std::int64_t> dims, std::vector<float> v)
      : values(std::move(v)) {
    view.name = std::move(name);
    view.dims = std::move(dims);
    view.data = values.data();
    view.bytes = values.size() * sizeof(float);
  }
};

// Head [1, 4 + classes + coefs, anchors] from per-anchor columns.
Tensor head(const std::vector<std::vector<float>>& anchors) {
  const std::size_t ch = anchors[0].size(), n = anchors.size();
  std::vector<float> v(ch * n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t c = 0; c < ch; ++c) v[c * n + a] = anchors[a][c];
  return Tensor("output0", {1, static_cast<std::int64_t>(ch), static_cast<std::int64_t>(n)}, v);
}

// One 4x4 prototype whose columns hold these values (every row alike).
Tensor columns(std::vector<float> cols) {
  std::vector<float> v;
  for (int r = 0; r < 4; ++r) v.insert(v.end(), cols.begin(), cols.end());
  return Tensor("output1", {1, 1, 4, 4}, v);
}

// 16x16 model input, frame the same unless given.
FrameMapping mapping(int fw = 16, int fh = 16, double scale = 1, double oy = 0) {
  FrameMapping m;
  m.frame_width = fw;
  m.frame_height = fh;
  m.input_width = m.input_height = 16;
  m.scale_x = m.scale_y = scale;
  m.offset_y = oy;
  return m;
}

struct Decoded {
  std::vector<Detection> dets;
  std::vector<Mask> masks;
  MaskCounts counts;
};

Decoded decode(const Tensor& h, const Tensor& p, const FrameMapping& m = mapping(),
               double threshold = 0.5, DetectionOptions o = {}) {
  Decoded d;
  const std::vector<TensorView> outs{h.view, p.view};
  d.dets = decode_detections(Decoder::kYolov8Seg, outs, o, m);
  d.masks = decode_masks(outs, d.dets, m, threshold, &d.counts);
  return d;
}

// Cells -3, 1, 1, -3 across: pixel x samples u = (x + 0.5) / 4 - 0.5, so
// x = 4 gives -0.5 and x = 5 gives 0.5 (3/8 and 5/8 of the way from -3 to 1)
// and x = 10 gives 0.5, x = 11 -0.5: columns 5..10 are set.
const std::vector<float> kBand{-3, 1, 1, -3};

}  // namespace

TEST(Yolov8Seg, MaskIsTheBandOfPositiveCellsInsideTheBox) {
  const auto d = decode(head({{8, 8, 16, 16, 0.9f, 1}}), columns(kBand));
  ASSERT_EQ(d.dets.size(), 1u);
  EXPECT_EQ(d.dets[0].anchor, 0);
  const Mask& k = d.masks[0];
  EXPECT_EQ(k.x, 0);
  EXPECT_EQ(k.y, 0);
  EXPECT_EQ(k.width, 16);
  EXPECT_EQ(k.height, 16);
  EXPECT_EQ(k.area, 96u);
  EXPECT_EQ(k.box_pixels, 256u);
  std::vector<std::uint32_t> runs{5};
  for (int r = 0; r < 15; ++r) runs.insert(runs.end(), {6, 10});
  runs.insert(runs.end(), {6, 5});
  EXPECT_EQ(k.runs, runs);
  const auto bits = mask_bitmap(k);
  ASSERT_EQ(bits.size(), 256u);
  EXPECT_EQ(bits[4], 0);
  EXPECT_EQ(bits[5], 1);
  EXPECT_EQ(bits[10], 1);
  EXPECT_EQ(bits[11], 0);
  EXPECT_EQ(d.counts.empty + d.counts.full + d.counts.invalid, 0u);
}

TEST(Yolov8Seg, MaskIsCroppedToItsBox) {
  // Box x 0..8, y 4..12: columns 5, 6, 7 of rows 4..11.
  const auto d = decode(head({{4, 8, 8, 8, 0.9f, 1}}), columns(kBand));
  const Mask& k = d.masks[0];
  EXPECT_EQ(k.x, 0);
  EXPECT_EQ(k.y, 4);
  EXPECT_EQ(k.width, 8);
  EXPECT_EQ(k.height, 8);
  EXPECT_EQ(k.area, 24u);
  std::vector<std::uint32_t> runs;
  for (int r = 0; r < 8; ++r) runs.insert(runs.end(), {5, 3});
  EXPECT_EQ(k.runs, runs);
}

TEST(Yolov8Seg, ThresholdAppliesToTheSigmoid) {
  const auto h = head({{8, 8, 16, 16, 0.9f, 1}});
  const auto p = columns(kBand);
  // sigmoid(0.5) = 0.62 < 0.7 < sigmoid(1) = 0.73: the band's edges go.
  EXPECT_EQ(decode(h, p, mapping(), 0.7).masks[0].area, 64u);
  EXPECT_EQ(decode(h, p, mapping(), 0.6).masks[0].area, 96u);
  const auto all = decode(h, p, mapping(), 0.0);
  EXPECT_EQ(all.masks[0].area, 256u);
  EXPECT_EQ(all.masks[0].runs, std::vector<std::uint32_t>({0, 256}));
  EXPECT_EQ(all.counts.full, 1u);
  const auto none = decode(h, p, mapping(), 1.0);
  EXPECT_EQ(none.masks[0].area, 0u);
  EXPECT_EQ(none.masks[0].runs, std::vector<std::uint32_t>({256}));
  EXPECT_EQ(none.counts.empty, 1u);
  EXPECT_THROW(decode(h, p, mapping(), 1.5), Error);
}

TEST(Yolov8Seg, LetterboxIsMappedBackAsBoxesAre) {
  // Frame 32x16 letterboxed into 16x16: scale 0.5, 4 rows of padding on top.
  // Model box y 4..12 is the whole frame; x = (m / 0.5): the band doubles,
  // columns 10..21 ((x + 0.5) / 8 - 0.5 in 0.75..2.25).
  const auto d = decode(head({{8, 8, 16, 8, 0.9f, 1}}), columns(kBand), mapping(32, 16, 0.5, 4));
  ASSERT_EQ(d.dets.size(), 1u);
  EXPECT_DOUBLE_EQ(d.dets[0].y_min, 0);
  EXPECT_DOUBLE_EQ(d.dets[0].y_max, 16);
  const Mask& k = d.masks[0];
  EXPECT_EQ(k.width, 32);
  EXPECT_EQ(k.height, 16);
  EXPECT_EQ(k.area, 12u * 16);
  EXPECT_EQ(k.runs[0], 10u);
  EXPECT_EQ(k.runs[1], 12u);
}

TEST(Yolov8Seg, CoefficientsWeighThePrototypes) {
  // Two prototypes: +1 everywhere and the band. Coefficients (-2, 1): the
  // band minus 2, nowhere positive. (3, 1): band + 3, positive wherever the
  // band is above -3: every column but the clamped edges 0, 1 and 14, 15.
  std::vector<float> v(16, 1.f);
  for (int r = 0; r < 4; ++r) v.insert(v.end(), kBand.begin(), kBand.end());
  const Tensor p("protos", {1, 2, 4, 4}, v);
  EXPECT_EQ(decode(head({{8, 8, 16, 16, 0.9f, -2, 1}}), p).masks[0].area, 0u);
  EXPECT_EQ(decode(head({{8, 8, 16, 16, 0.9f, 3, 1}}), p).masks[0].area, 12u * 16);
}

TEST(Yolov8Seg, MasksFollowTheDetectionsAfterNms) {
  // Anchor 1 beats anchor 0 (same box): one detection, anchor 1's mask.
  const auto d = decode(head({{8, 8, 16, 16, 0.5f, -1}, {8, 8, 16, 16, 0.9f, 1}}), columns(kBand));
  ASSERT_EQ(d.dets.size(), 1u);
  EXPECT_EQ(d.dets[0].anchor, 1);
  EXPECT_EQ(d.masks.size(), 1u);
  EXPECT_EQ(d.masks[0].area, 96u);
}

TEST(Yolov8Seg, PrototypesMayComeFirst) {
  const auto h = head({{8, 8, 16, 16, 0.9f, 1}});
  const auto p = columns(kBand);
  const std::vector<TensorView> outs{p.view, h.view};
  const auto dets = decode_detections(Decoder::kYolov8Seg, outs, {}, mapping());
  EXPECT_EQ(decode_masks(outs, dets, mapping(), 0.5)[0].area, 96u);
}

TEST(Yolov8Seg, NanCoefficientGivesAnEmptyCountedMask) {
  const auto d = decode(head({{8, 8, 16, 16, 0.9f, float(kNaN)}}), columns(kBand));
  ASSERT_EQ(d.masks.size(), 1u);
  EXPECT_TRUE(d.masks[0].invalid);
  EXPECT_EQ(d.masks[0].area, 0u);
  EXPECT_EQ(d.masks[0].runs, std::vector<std::uint32_t>({256}));
  EXPECT_EQ(d.counts.invalid, 1u);
  EXPECT_EQ(d.counts.empty, 1u);
}

TEST(Yolov8Seg, NanPrototypeUnderTheBoxGivesAnInvalidMask) {
  auto p = columns(kBand);
  p.values[5] = float(kNaN);
  EXPECT_TRUE(decode(head({{8, 8, 16, 16, 0.9f, 1}}), p).masks[0].invalid);
}

namespace {

std::string layout_error(const std::vector<TensorView>& outs, std::size_t labels = 0) {
  try {
    segment_tensors(outs, labels);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStreamData);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Yolov8Seg, WrongPrototypeShapesAreRefusedByName) {
  const auto h = head({{8, 8, 16, 16, 0.9f, 1}});
  const Tensor flat("protos", {1, 1, 16}, std::vector<float>(16, 1.f));
  EXPECT_NE(layout_error({h.view, flat.view}).find("'protos' [1, 1, 16] float32"),
            std::string::npos);
  const Tensor five("protos", {1, 1, 1, 4, 4}, std::vector<float>(16, 1.f));
  EXPECT_NE(layout_error({h.view, five.view}).find("[1, M, h, w]"), std::string::npos);
  const Tensor empty("protos", {1, 1, 0, 4}, {});
  EXPECT_NE(layout_error({h.view, empty.view}).find("empty"), std::string::npos);
  EXPECT_NE(layout_error({h.view}).find("exactly two"), std::string::npos);
  Tensor ints("protos", {1, 1, 4, 4}, std::vector<float>(16, 1.f));
  ints.view.dtype = DType::kInt32;
  EXPECT_NE(layout_error({h.view, ints.view}).find("not a float"), std::string::npos);
}

TEST(Yolov8Seg, CoefficientCountMismatchIsRefused) {
  // 4 box + 1 score + 1 coefficient, but 2 prototypes: no class left.
  const auto h = head({{8, 8, 16, 16, 0.9f, 1}});
  const Tensor two("protos", {1, 2, 4, 4}, std::vector<float>(32, 1.f));
  EXPECT_NE(layout_error({h.view, two.view}).find("leave no class score"), std::string::npos);
  // 4 box + 2 + 1: with two labels, a second prototype leaves one class.
  const auto h3 = head({{8, 8, 16, 16, 0.9f, 0.1f, 1}});
  EXPECT_NE(layout_error({h3.view, two.view}, 2).find("2 labels are given"), std::string::npos);
  EXPECT_EQ(layout_error({h3.view, columns(kBand).view}, 2), "");
}

TEST(Yolov8Seg, EightyFourHundredCandidatesOfAHundredClasses) {
  // 640x640 input, 8400 disjoint 4x4 boxes (80 across, 105 down), anchor a
  // of class a % 100 scoring 0.3 + 0.6 * a / 8400: NMS keeps them all, the
  // 100 best are anchors 8399 down to 8300; one +1 prototype of 32 gives
  // full masks of 16 pixels.
  const int n = 8400, classes = 100, coefs = 32, ch = 4 + classes + coefs;
  std::vector<float> hv(static_cast<std::size_t>(ch) * n, 0.f);
  for (int a = 0; a < n; ++a) {
    hv[0 * n + a] = 4 + 8 * (a % 80);
    hv[1 * n + a] = 3 + 6 * (a / 80);
    hv[2 * n + a] = hv[3 * n + a] = 4;
    hv[(4 + a % classes) * n + a] = 0.3f + 0.6f * a / n;
    hv[(4 + classes) * n + a] = 1;
  }
  const Tensor h("output0", {1, ch, n}, hv);
  std::vector<float> pv(static_cast<std::size_t>(coefs) * 160 * 160, 0.f);
  std::fill(pv.begin(), pv.begin() + 160 * 160, 1.f);
  const Tensor p("output1", {1, coefs, 160, 160}, pv);
  FrameMapping m;
  m.frame_width = m.frame_height = m.input_width = m.input_height = 640;
  const auto d = decode(h, p, m);
  ASSERT_EQ(d.dets.size(), 100u);
  EXPECT_EQ(d.dets.front().anchor, 8399);
  EXPECT_EQ(d.dets.back().anchor, 8300);
  EXPECT_EQ(d.dets.front().label_id, 99);
  EXPECT_EQ(d.counts.full, 100u);
  for (const Mask& k : d.masks) EXPECT_EQ(k.area, 16u);
}

TEST(Yolov8Seg, DetectionFromElsewhereIsRefused) {
  const auto h = head({{8, 8, 16, 16, 0.9f, 1}});
  const auto p = columns(kBand);
  Detection d;
  d.x_max = d.y_max = 4;
  d.anchor = 7;
  EXPECT_THROW(decode_masks({h.view, p.view}, {d}, mapping(), 0.5), Error);
}

TEST(Yolov8Seg, BitmapOfRunsThatDoNotAddUpIsEmpty) {
  Mask k;
  k.width = k.height = 2;
  k.runs = {1, 2};
  EXPECT_TRUE(mask_bitmap(k).empty());
  k.runs = {1, 2, 1};
  EXPECT_EQ(mask_bitmap(k), std::vector<std::uint8_t>({0, 1, 1, 0}));
}

TEST(Yolov8Seg, MasksPastTheFrameRunBudgetAreDroppedAndCounted) {
  // Three disjoint detections of the band (33 runs each, full height):
  // a budget of 40 runs keeps the best one's mask only.
  const auto h = head({{4, 8, 8, 16, 0.9f, 1}, {12, 8, 8, 16, 0.8f, 1}, {8, 8, 2, 2, 0.7f, 1}});
  const auto p = columns(kBand);
  const std::vector<TensorView> outs{h.view, p.view};
  DetectionOptions o;
  o.class_agnostic = true;
  o.iou_threshold = 0.99;
  const auto dets = decode_detections(Decoder::kYolov8Seg, outs, o, mapping());
  ASSERT_EQ(dets.size(), 3u);
  MaskCounts counts;
  const auto masks = decode_masks(outs, dets, mapping(), 0.5, &counts, 40);
  ASSERT_EQ(masks.size(), 3u);
  EXPECT_FALSE(masks[0].dropped);
  EXPECT_EQ(masks[0].area, 3u * 16);  // columns 5, 6, 7 of box 0..8
  EXPECT_TRUE(masks[1].dropped);
  EXPECT_TRUE(masks[1].runs.empty());
  EXPECT_TRUE(masks[2].dropped);
  EXPECT_EQ(counts.dropped, 2u);
  EXPECT_EQ(counts.empty, 0u);
  // The default budget keeps them all.
  MaskCounts all;
  decode_masks(outs, dets, mapping(), 0.5, &all);
  EXPECT_EQ(all.dropped, 0u);
}
