// task "anomaly": sidecar keys (ours and anomalib's metadata.json), the
// normalisation against anomalib's formula, the decision, and the map's
// anomalous regions in frame pixels.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/model_config.h"
#include "decode/anomaly.h"
#include "overlay/draw.h"

using namespace torchinfer;

namespace {

// thresholds 12 (image) / 10 (pixel), range 0..20: normalised = (raw - t) / 20 + 0.5.
const char* kSidecar = R"({"task": "anomaly", "image_threshold": 12.0, "pixel_threshold": 10.0,
                           "min": 0.0, "max": 20.0})";

AnomalyConfig config(const std::string& text = kSidecar) {
  return parse_model_config_text(text, "m.json").anomaly;
}

// anomalib's formula, written out independently of the decoder.
double anomalib_normalize(double raw, double threshold, double mn, double mx) {
  return std::min(1.0, std::max(0.0, (raw - threshold) / (mx - mn) + 0.5));
}

TensorView view(const std::string& name, std::vector<std::int64_t> dims,
                const std::vector<float>& data) {
  TensorView v;
  v.name = name;
  v.dims = std::move(dims);
  v.data = data.data();
  v.bytes = data.size() * sizeof(float);
  return v;
}

void expect_field_error(const std::string& json, const std::string& field) {
  try {
    parse_model_config_text(json, "m.json");
    FAIL() << "accepted: " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(AnomalyConfig, SidecarKeysGiveBothNormalisations) {
  const ModelConfig c = parse_model_config_text(kSidecar, "m.json");
  EXPECT_EQ(c.task, Task::kAnomaly);
  ASSERT_TRUE(c.anomaly.score && c.anomaly.map);
  EXPECT_EQ(c.anomaly.score->threshold, 12.0);
  EXPECT_EQ(c.anomaly.map->threshold, 10.0);
  EXPECT_EQ(c.anomaly.score->min, 0.0);
  EXPECT_EQ(c.anomaly.map->max, 20.0);
  EXPECT_FALSE(c.anomaly.sensitivity);
  EXPECT_EQ(c.anomaly.raw_threshold, 0.5);
}

TEST(AnomalyConfig, AnomalibMetadataJsonIsASidecar) {
  // What anomalib's export writes: task, an albumentations transform and
  // per-output ranges (pred_scores.* / anomaly_maps.*).
  const std::string text = R"({
    "task": "segmentation",
    "transform": {"__version__": "1.3.1", "transform": {"__class_fullname__": "Compose",
      "p": 1.0, "transforms": [
        {"__class_fullname__": "Resize", "p": 1, "height": 64, "width": 96, "interpolation": 1},
        {"__class_fullname__": "Normalize", "p": 1.0, "mean": [0.5, 0.5, 0.5],
         "std": [0.25, 0.25, 0.25], "max_pixel_value": 255.0},
        {"__class_fullname__": "ToTensorV2", "p": 1.0}]}},
    "image_threshold": 3.0, "pixel_threshold": 2.5,
    "pred_scores.min": 1.0, "pred_scores.max": 5.0,
    "anomaly_maps.min": 0.0, "anomaly_maps.max": 6.0,
    "box_scores.min": 0.0, "box_scores.max": 1.0})";
  const ModelConfig c = parse_model_config_text(text, "metadata.json");
  EXPECT_EQ(c.task, Task::kAnomaly);
  EXPECT_EQ(c.input_width, 96);
  EXPECT_EQ(c.input_height, 64);
  // pixel 255 -> (1 - 0.5) / 0.25 = 2
  EXPECT_FLOAT_EQ(255 * c.alpha[0] + c.beta[0], 2.0f);
  ASSERT_TRUE(c.anomaly.score && c.anomaly.map);
  EXPECT_EQ(c.anomaly.score->min, 1.0);
  EXPECT_EQ(c.anomaly.score->max, 5.0);
  EXPECT_EQ(c.anomaly.map->max, 6.0);
  EXPECT_EQ(c.anomaly.map->threshold, 2.5);
}

TEST(AnomalyConfig, AnomalibKeysAreRefusedOutsideItsMetadata) {
  // Without "transform" it is our own sidecar: anomalib's other keys and
  // task names are typos there.
  expect_field_error(R"({"task": "anomaly", "box_scores.min": 0})", "box_scores.min");
  expect_field_error(R"({"task": "segmentation"})", "task");
  expect_field_error(R"({"transform": {"transform": {"transforms": []}}, "colour": 1})", "colour");
}

TEST(AnomalyConfig, UnsupportedAnomalibTransformIsRefused) {
  expect_field_error(R"({"transform": {"transform": {"transforms": [
      {"__class_fullname__": "CenterCrop", "height": 10, "width": 10}]}}})",
                     "transform");
  expect_field_error(R"({"transform": [1, 2]})", "transform");
  expect_field_error(R"({"transform": {"transform": {"transforms": [
      {"__class_fullname__": "Resize", "height": 10, "width": "wide"}]}}})",
                     "transform");
  expect_field_error(R"({"transform": {"transform": {"transforms": [
      {"__class_fullname__": "Normalize", "mean": [0.5], "std": [0.5],
       "max_pixel_value": "255"}]}}})",
                     "transform");
  expect_field_error(R"({"transform": {"transform": {"transforms": [
      {"__class_fullname__": "Resize", "height": 0, "width": 10}]}}})",
                     "transform");
}

TEST(AnomalyConfig, ContradictoryKeysNameTheKey) {
  expect_field_error(R"({"task": "anomaly", "image_threshold": 1, "min": 5, "max": 5})", "max");
  expect_field_error(R"({"task": "anomaly", "image_threshold": 1, "min": 6, "max": 5})", "max");
  expect_field_error(R"({"task": "anomaly", "image_threshold": 9, "min": 0, "max": 5})",
                     "image_threshold");
  expect_field_error(R"({"task": "anomaly", "pixel_threshold": -1, "min": 0, "max": 5})",
                     "pixel_threshold");
  expect_field_error(
      R"({"task": "anomaly", "image_threshold": 1, "pred_scores.min": 0, "pred_scores.max": 0.5})",
      "image_threshold");
  expect_field_error(
      R"({"task": "anomaly", "image_threshold": 1, "min": 0, "max": 2, "pred_scores.min": 0})",
      "pred_scores.min");
}

TEST(AnomalyConfig, MissingKeysNameTheKey) {
  expect_field_error(R"({"task": "anomaly", "image_threshold": 1})", "image_threshold");
  expect_field_error(R"({"task": "anomaly", "image_threshold": 1, "min": 0})", "image_threshold");
  expect_field_error(R"({"task": "anomaly", "min": 0, "max": 1})", "min");
  expect_field_error(R"({"task": "anomaly", "pixel_threshold": 1, "anomaly_maps.min": 0,
                         "anomaly_maps.max": 2, "pred_scores.max": 3})",
                     "pred_scores.max");
}

TEST(AnomalyConfig, BadValuesAreRefused) {
  // JSON has no NaN; a string or infinity-like overflow is what reaches us.
  expect_field_error(R"({"task": "anomaly", "image_threshold": "NaN", "min": 0, "max": 1})",
                     "image_threshold");
  EXPECT_THROW(
      parse_model_config_text(
          R"({"task": "anomaly", "image_threshold": 0.5, "min": 0, "max": 1e999})", "m.json"),
      Error);
  expect_field_error(R"({"task": "anomaly", "sensitivity": 1.5})", "sensitivity");
  expect_field_error(R"({"task": "anomaly", "sensitivity": -0.1})", "sensitivity");
  expect_field_error(R"({"task": "anomaly", "anomaly_threshold": "high"})", "anomaly_threshold");
  // Thresholds on a classifier are a mistake, not something to ignore.
  expect_field_error(R"({"task": "classification", "image_threshold": 1, "min": 0, "max": 2})",
                     "image_threshold");
  expect_field_error(R"({"image_threshold": 1, "min": 0, "max": 2})", "image_threshold");
}

TEST(AnomalyConfig, SensitivityWithoutThresholdsIsAnError) {
  expect_field_error(R"({"task": "anomaly", "sensitivity": 0.7})", "sensitivity");
  // The same through an element property (override).
  ConfigOverrides o;
  o.task = Task::kAnomaly;
  o.sensitivity = 0.7;
  try {
    resolve_model_config("none.pt", "", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("anomaly-threshold"), std::string::npos) << e.what();
  }
}

TEST(AnomalyConfig, OverridesSetSensitivityAndRawThreshold) {
  ConfigOverrides o;
  o.task = Task::kAnomaly;
  o.anomaly_threshold = 3.25;
  EXPECT_EQ(resolve_model_config("none.pt", "", o).anomaly.raw_threshold, 3.25);
}

TEST(AnomalyNormalisation, MatchesAnomalibBelowAtAndAboveTheThreshold) {
  const MinMaxNorm n{12.0, 0.0, 20.0};
  for (double raw : {-50.0, 0.0, 5.0, 11.99, 12.0, 12.01, 19.0, 22.0, 100.0})
    EXPECT_DOUBLE_EQ(normalize_min_max(raw, n), anomalib_normalize(raw, 12.0, 0.0, 20.0)) << raw;
  EXPECT_DOUBLE_EQ(normalize_min_max(12.0, n), 0.5);
  EXPECT_DOUBLE_EQ(normalize_min_max(-50.0, n), 0.0);
  EXPECT_DOUBLE_EQ(normalize_min_max(100.0, n), 1.0);
}

TEST(AnomalyDecode, DictOutputsBelowAtAndAboveTheThreshold) {
  const AnomalyConfig cfg = config();
  for (float raw : {8.0f, 12.0f, 16.0f}) {
    const std::vector<float> map(6, 1.0f), score{raw};
    // anomalib's names, the score listed after the map.
    const std::vector<TensorView> views = {view("anomaly_map", {1, 1, 2, 3}, map),
                                           view("pred_score", {1}, score)};
    const auto r = decode_anomaly(views, cfg);
    ASSERT_TRUE(r);
    EXPECT_DOUBLE_EQ(r->raw_score, raw);
    EXPECT_DOUBLE_EQ(r->score, anomalib_normalize(raw, 12.0, 0.0, 20.0));
    EXPECT_EQ(r->anomalous, raw >= 12.0f) << raw;
    EXPECT_TRUE(r->normalized);
    EXPECT_EQ(r->map_name, "anomaly_map");
  }
}

TEST(AnomalyDecode, MapAloneScoresByItsMaximum) {
  const AnomalyConfig cfg = config();
  for (float peak : {11.0f, 12.0f, 13.0f}) {
    const std::vector<float> map = {1.0f, peak, 3.0f, 2.0f};
    const auto r = decode_anomaly({view("output", {1, 1, 2, 2}, map)}, cfg);
    ASSERT_TRUE(r);
    EXPECT_DOUBLE_EQ(r->raw_score, peak);
    EXPECT_DOUBLE_EQ(r->score, (peak - 12.0) / 20.0 + 0.5);
    EXPECT_EQ(r->anomalous, peak >= 12.0f);
    EXPECT_EQ(r->map_name, "output");
  }
}

TEST(AnomalyDecode, TupleOutputsAreFoundByShape) {
  const AnomalyConfig cfg = config();
  const std::vector<float> score{14.0f}, map(4, 30.0f);
  // (score [1,1], map): the score is used, not the map's maximum.
  const auto r =
      decode_anomaly({view("output0", {1, 1}, score), view("output1", {1, 1, 2, 2}, map)}, cfg);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->raw_score, 14.0);
  EXPECT_DOUBLE_EQ(r->score, 0.6);
  EXPECT_EQ(r->map_name, "output1");
}

TEST(AnomalyDecode, AnomalibTwoInferenceBatchTupleSkipsLabelAndMask) {
  // (pred_score [1], pred_label [1] bool, anomaly_map [1,h,w], pred_mask
  // [1,h,w] bool), already normalised by anomalib 2's post-processor.
  const std::vector<float> score{0.75f}, map = {0.1f, 0.8f, 0.2f, 0.3f};
  const bool label = true;
  const bool mask[4] = {false, true, false, false};
  TensorView l;
  l.name = "output1";
  l.dtype = DType::kBool;
  l.dims = {1};
  l.data = &label;
  l.bytes = 1;
  TensorView m = l;
  m.name = "output3";
  m.dims = {1, 2, 2};
  m.data = mask;
  m.bytes = 4;
  const std::vector<TensorView> views = {view("output0", {1}, score), l,
                                         view("output2", {1, 2, 2}, map), m};
  const auto r = decode_anomaly(views, AnomalyConfig{});
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->score, 0.75);
  EXPECT_TRUE(r->anomalous);
  EXPECT_EQ(r->map_name, "output2");
  MapPlacement where;
  where.input_width = where.input_height = 2;
  where.clip_x1 = where.clip_y1 = 2;
  const auto regions =
      anomaly_regions(*find_anomaly_outputs(views).map, anomaly_map_rule(AnomalyConfig{}), where);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_DOUBLE_EQ(regions[0].x_min, 1.0);
  EXPECT_DOUBLE_EQ(regions[0].x_max, 2.0);
  EXPECT_DOUBLE_EQ(regions[0].y_min, 0.0);
  EXPECT_DOUBLE_EQ(regions[0].y_max, 1.0);
}

TEST(AnomalyDecode, NoMapOrScoreIsNoResult) {
  const std::vector<float> logits(5, 0.f);
  EXPECT_FALSE(decode_anomaly({view("output", {1, 5}, logits)}, config()));
  EXPECT_FALSE(decode_anomaly({view("output", {1, 3, 2, 2}, std::vector<float>(12))}, config()));
}

TEST(AnomalyDecode, SensitivityShiftsTheDecision) {
  // score 0.6 (raw 14): anomalous at the default 0.5; with sensitivity 0.3
  // the threshold is 1 - 0.3 = 0.7 (anomalib's image_sensitivity).
  const std::vector<float> score{14.0f};
  const std::vector<TensorView> views = {view("pred_score", {1}, score)};
  std::string text = kSidecar;
  text.insert(text.size() - 1, R"(, "sensitivity": 0.3)");
  const auto strict = decode_anomaly(views, config(text));
  ASSERT_TRUE(strict);
  EXPECT_DOUBLE_EQ(strict->threshold, 0.7);
  EXPECT_FALSE(strict->anomalous);
  text = kSidecar;
  text.insert(text.size() - 1, R"(, "sensitivity": 0.4)");
  const auto loose = decode_anomaly(views, config(text));
  EXPECT_DOUBLE_EQ(loose->threshold, 0.6);
  EXPECT_TRUE(loose->anomalous);  // 0.6 >= 0.6
}

TEST(AnomalyDecode, WithoutThresholdsRawValuesPassThrough) {
  AnomalyConfig cfg = config(R"({"task": "anomaly"})");
  const std::vector<float> score{0.5f};
  auto r = decode_anomaly({view("pred_score", {1}, score)}, cfg);
  EXPECT_FALSE(r->normalized);
  EXPECT_DOUBLE_EQ(r->score, 0.5);
  EXPECT_TRUE(r->anomalous);  // default anomaly-threshold 0.5
  cfg.raw_threshold = 0.75;
  r = decode_anomaly({view("pred_score", {1}, score)}, cfg);
  EXPECT_FALSE(r->anomalous);
  const std::vector<float> big{7.5f};
  r = decode_anomaly({view("pred_score", {1}, big)}, cfg);
  EXPECT_DOUBLE_EQ(r->score, 7.5);
  EXPECT_TRUE(r->anomalous);
}

TEST(AnomalyRegions, BoxesOfAKnownMapInFramePixels) {
  // 4x8 map of a 32x16 model input (one cell = 4x4 input pixels); the frame
  // is 64x32, so model = frame / 2 and one cell = 8x8 frame pixels.
  std::vector<float> map(32, 0.0f);
  auto at = [&](int x, int y) -> float& { return map[static_cast<std::size_t>(y * 8 + x)]; };
  at(1, 1) = at(2, 1) = at(2, 2) = 20.0f;  // 3 cells, bounding 2x2 cells at (1,1)
  at(6, 3) = 11.0f;                        // one cell, normalised 0.55
  at(4, 0) = 9.9f;                         // below 10: normal
  const MapRule rule = anomaly_map_rule(config());
  EXPECT_DOUBLE_EQ(rule.norm->threshold, 10.0);  // the map's own threshold
  MapPlacement where;
  where.input_width = 32;
  where.input_height = 16;
  where.scale_x = where.scale_y = 0.5;
  where.clip_x1 = 64;
  where.clip_y1 = 32;
  const auto regions = anomaly_regions(view("anomaly_map", {1, 1, 4, 8}, map), rule, where);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].cells, 3);
  EXPECT_DOUBLE_EQ(regions[0].x_min, 8.0);
  EXPECT_DOUBLE_EQ(regions[0].y_min, 8.0);
  EXPECT_DOUBLE_EQ(regions[0].x_max, 24.0);
  EXPECT_DOUBLE_EQ(regions[0].y_max, 24.0);
  EXPECT_DOUBLE_EQ(regions[0].peak, 1.0);  // (20 - 10) / 20 + 0.5
  EXPECT_EQ(regions[1].cells, 1);
  EXPECT_DOUBLE_EQ(regions[1].x_min, 48.0);
  EXPECT_DOUBLE_EQ(regions[1].y_min, 24.0);
  EXPECT_DOUBLE_EQ(regions[1].x_max, 56.0);
  EXPECT_DOUBLE_EQ(regions[1].y_max, 32.0);
  EXPECT_DOUBLE_EQ(regions[1].peak, 0.55);
}

TEST(AnomalyRegions, OffsetsAndClipMapIntoAPartsBox) {
  // A part at (100, 50) of size 16x8 fed to a 16x8 input: model = frame - (100, 50).
  std::vector<float> map(8, 0.0f);
  map[3] = 1.0f;      // cell (3, 0) of a 2x4 map: input x 12..16, y 0..4
  AnomalyConfig raw;  // no thresholds: raw map >= 0.5
  MapPlacement where;
  where.input_width = 16;
  where.input_height = 8;
  where.offset_x = -100;
  where.offset_y = -50;
  where.clip_x0 = 100;
  where.clip_y0 = 50;
  where.clip_x1 = 114;  // the part's box ends at x 114: the region is cut there
  where.clip_y1 = 58;
  const auto regions = anomaly_regions(view("m", {1, 1, 2, 4}, map), anomaly_map_rule(raw), where);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_DOUBLE_EQ(regions[0].x_min, 112.0);
  EXPECT_DOUBLE_EQ(regions[0].x_max, 114.0);
  EXPECT_DOUBLE_EQ(regions[0].y_min, 50.0);
  EXPECT_DOUBLE_EQ(regions[0].y_max, 54.0);
}

TEST(AnomalyRegions, MapOnlyModelUsesTheScoreNormalisationAndNaNCellsAreNormal) {
  AnomalyConfig cfg = config(R"({"task": "anomaly", "image_threshold": 4, "min": 0, "max": 8})");
  const MapRule rule = anomaly_map_rule(cfg);
  ASSERT_TRUE(rule.norm);
  EXPECT_DOUBLE_EQ(rule.norm->threshold, 4.0);
  std::vector<float> map = {std::numeric_limits<float>::quiet_NaN(), 4.0f, 3.9f, 0.0f};
  MapPlacement where;
  where.input_width = 2;
  where.input_height = 2;
  where.clip_x1 = where.clip_y1 = 2;
  const auto regions = anomaly_regions(view("m", {1, 1, 2, 2}, map), rule, where);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_DOUBLE_EQ(regions[0].x_min, 1.0);
  EXPECT_DOUBLE_EQ(regions[0].peak, 0.5);
  EXPECT_THROW(anomaly_regions(view("s", {1}, map), rule, where), Error);
}

TEST(AnomalyHeatMap, ColoursAndHeatOfRawAndNormalisedValues) {
  // OpenCV's JET: dark blue at 0, dark red at 1.
  EXPECT_EQ(heat_colour(0.0).b, 128);
  EXPECT_EQ(heat_colour(0.0).r, 0);
  EXPECT_EQ(heat_colour(1.0).r, 128);
  EXPECT_EQ(heat_colour(1.0).b, 0);
  MapRule raw;
  raw.threshold = 2.0;
  EXPECT_DOUBLE_EQ(heat_of(2.0, raw), 0.5);  // the threshold sits at 0.5
  EXPECT_DOUBLE_EQ(heat_of(8.0, raw), 1.0);
  EXPECT_DOUBLE_EQ(heat_of(std::nan(""), raw), 0.0);
  MapRule norm;
  norm.norm = MinMaxNorm{1, 0, 2};
  norm.threshold = 0.7;  // sensitivity 0.3: the colours stay anomalib's
  EXPECT_DOUBLE_EQ(heat_of(0.25, norm), 0.25);
  EXPECT_EQ(blend_sample(0, 200, 0.4), 80);
  EXPECT_EQ(blend_sample(100, 100, 0.9), 100);
}

TEST(AnomalyHeatMap, BlendsOnlyInsideThePartsBox) {
  // An 8x8 RGB image; the map (2x2, all 1.0 raw) covers x 2..8, y 0..6 but
  // the part's box ends at x 6, y 4.
  std::vector<std::uint8_t> px(8 * 8 * 3, 0);
  OverlayImage img;
  img.format = PixelFormat::kRGB;
  img.width = img.height = 8;
  img.planes[0] = px.data();
  img.strides[0] = 24;
  const std::vector<float> map(4, 1.0f);
  OverlayHeatMap hm;
  hm.map = view("m", {1, 1, 2, 2}, map);
  hm.where.input_width = hm.where.input_height = 6;
  hm.where.offset_x = -2;  // model = frame - 2
  hm.where.clip_x0 = 2;
  hm.where.clip_x1 = 6;
  hm.where.clip_y1 = 4;
  draw_heat_map(hm, 0.5, img);
  const Rgb hot = heat_colour(1.0);
  auto r_at = [&](int x, int y) { return px[static_cast<std::size_t>(y * 24 + x * 3)]; };
  EXPECT_EQ(r_at(2, 0), blend_sample(0, hot.r, 0.5));
  EXPECT_EQ(r_at(5, 3), blend_sample(0, hot.r, 0.5));
  EXPECT_EQ(r_at(1, 0), 0);  // left of the map
  EXPECT_EQ(r_at(6, 0), 0);  // inside the map, outside the box
  EXPECT_EQ(r_at(3, 4), 0);
}

// Finite keys whose derived range overflows: max - min is infinite (or its
// inverse is), so every score would normalise to 0.5 (every part
// `anomalous`) or NaN. Refused, naming the keys.
TEST(AnomalyConfig, RangesThatOverflowAreRefusedNamingTheKeys) {
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_model_config_text(text, "m.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
      return e.what();
    }
    return "(accepted)";
  };
  const std::string huge =
      error_of(R"({"task": "anomaly", "image_threshold": 0, "min": -1e308, "max": 1e308})");
  EXPECT_NE(huge.find("m.json: field 'max': 'max' - 'min'"), std::string::npos) << huge;
  EXPECT_NE(huge.find("is not a finite, non-zero number"), std::string::npos) << huge;
  const std::string own = error_of(
      R"({"task": "anomaly", "pixel_threshold": 0, "anomaly_maps.min": -1.5e308,
          "anomaly_maps.max": 1e308})");
  EXPECT_NE(own.find("field 'anomaly_maps.max': 'anomaly_maps.max' - 'anomaly_maps.min'"),
            std::string::npos)
      << own;
  // A range so small that 1 / range overflows.
  const std::string tiny =
      error_of(R"({"task": "anomaly", "image_threshold": 0, "min": 0, "max": 1e-320})");
  EXPECT_NE(tiny.find("field 'max'"), std::string::npos) << tiny;
  // Wide ranges that do not overflow still decide by the threshold.
  const AnomalyConfig wide =
      config(R"({"task": "anomaly", "image_threshold": 0, "min": -1e30, "max": 1e30})");
  const std::vector<float> below{-1e29f}, above{1e29f};
  EXPECT_FALSE(decode_anomaly({view("pred_score", {1}, below)}, wide)->anomalous);
  EXPECT_TRUE(decode_anomaly({view("pred_score", {1}, above)}, wide)->anomalous);
}

// A [N,1,1,1] output (a map pooled to one cell) is a 1x1 map: its one cell
// is the score, and the whole input is its one region when anomalous.
TEST(AnomalyDecode, OneCellMapIsAMap) {
  const AnomalyConfig cfg = config();
  for (float v : {9.0f, 13.0f}) {  // below / above both thresholds (12 image, 10 pixel)
    const std::vector<float> cell{v};
    const std::vector<TensorView> views = {view("output", {1, 1, 1, 1}, cell)};
    const auto r = decode_anomaly(views, cfg);
    ASSERT_TRUE(r) << "a [1,1,1,1] output is a 1x1 anomaly map";
    EXPECT_DOUBLE_EQ(r->raw_score, v);
    EXPECT_DOUBLE_EQ(r->score, (v - 12.0) / 20.0 + 0.5);
    EXPECT_EQ(r->anomalous, v >= 12.0f);
    EXPECT_EQ(r->map_name, "output");
    MapPlacement where;
    where.input_width = where.input_height = 16;
    where.clip_x1 = where.clip_y1 = 16;
    const auto regions =
        anomaly_regions(*find_anomaly_outputs(views).map, anomaly_map_rule(cfg), where);
    ASSERT_EQ(regions.size(), v >= 12.0f ? 1u : 0u);
    if (!regions.empty()) {
      EXPECT_DOUBLE_EQ(regions[0].x_max, 16.0);
      EXPECT_DOUBLE_EQ(regions[0].y_max, 16.0);
      EXPECT_EQ(regions[0].cells, 1);
    }
  }
}
