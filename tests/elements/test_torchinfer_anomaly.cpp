// torchinfer with task "anomaly" (anomalib-style models from
// models/make_anomaly_test_models.py): the map is the 4x4 average of the red
// channel times 20, so a frame's red decides every value. Whole-frame and
// roi-list results, anomalib's metadata.json as the sidecar, NaN maps, and
// torchmetaconvert's "anomaly" JSON with the anomalous regions.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "overlay/draw.h"

using namespace torchinfer::test;

namespace {

// 32x32 frames: the model's 16x16 input is the frame halved, one map cell
// covers 8x8 frame pixels.
const std::string kCaps = "video/x-raw,format=RGB,width=32,height=32,framerate=30/1";

struct Paint {
  int x, y, w, h;
  guint8 r, g;
};

GstBuffer* painted(const std::string& caps, const std::vector<Paint>& paints,
                   GstClockTime pts = 0) {
  GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame f;
  EXPECT_TRUE(gst_video_frame_map(&f, &info, buf, GST_MAP_WRITE));
  auto* data = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0);
  std::memset(data, 0, static_cast<std::size_t>(stride) * GST_VIDEO_INFO_HEIGHT(&info));
  for (const Paint& p : paints)
    for (int y = p.y; y < p.y + p.h; ++y)
      for (int x = p.x; x < p.x + p.w; ++x) {
        data[y * stride + x * 3] = p.r;
        data[y * stride + x * 3 + 1] = p.g;
      }
  gst_video_frame_unmap(&f);
  GST_BUFFER_PTS(buf) = pts;
  return buf;
}

GstBuffer* uniform_red(guint8 r) {
  return painted(kCaps, {{0, 0, 32, 32, r, 0}});
}

// What the preprocessing hands the model for red r (mean 0, std 1), times 20.
double raw_of(guint8 r) {
  return r * (1.0f / 255.0f) * 20.0;
}

// anomalib's normalisation with threshold t over the range 0..20.
double normalised(double raw, double t) {
  return std::min(1.0, std::max(0.0, (raw - t) / 20.0 + 0.5));
}

struct Verdict {
  double score = -1, raw_score = -1, threshold = -1;
  gboolean anomalous = FALSE, normalized = FALSE;
  std::string map, label;
  double confidence = -1;
};

Verdict frame_verdict(GstBuffer* buf) {
  Verdict v;
  const GstStructure* s = gst_buffer_get_torch_anomaly(buf);
  EXPECT_NE(s, nullptr);
  if (!s) return v;
  EXPECT_TRUE(gst_structure_get_double(s, "score", &v.score));
  EXPECT_TRUE(gst_structure_get_double(s, "raw_score", &v.raw_score));
  EXPECT_TRUE(gst_structure_get_double(s, "threshold", &v.threshold));
  EXPECT_TRUE(gst_structure_get_boolean(s, "anomalous", &v.anomalous));
  EXPECT_TRUE(gst_structure_get_boolean(s, "normalized", &v.normalized));
  v.map = gst_structure_get_string(s, "map");
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  EXPECT_NE(cm, nullptr);
  if (cm) {
    const GstStructure* c = gst_custom_meta_get_structure(cm);
    v.label = gst_structure_get_string(c, "label");
    gst_structure_get_double(c, "confidence", &v.confidence);
  }
  return v;
}

GstVideoRegionOfInterestMeta* add_roi(GstBuffer* buf, guint x, guint y, guint w, guint h, int id) {
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_video_region_of_interest_meta(buf, "part", x, y, w, h);
  roi->id = id;
  return roi;
}

std::vector<GstVideoRegionOfInterestMeta*> rois_of(GstBuffer* buf) {
  std::vector<GstVideoRegionOfInterestMeta*> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(buf, &iter,
                                                       GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    out.push_back(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m));
  return out;
}

// The JSON lines torchmetaconvert wrote for these frames.
std::vector<nlohmann::json> json_lines(const std::string& chain, const std::string& caps,
                                       std::vector<GstBuffer*> frames,
                                       const std::string& convert_props = "") {
  char path[] = "/tmp/torchinfer-anomaly-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  GstHarness* h = gst_harness_new_parse(
      (chain + " ! torchmetaconvert " + convert_props + " location=" + path).c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  for (GstBuffer* b : frames) gst_buffer_unref(gst_harness_push_and_pull(h, b));
  gst_harness_teardown(h);
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
  std::remove(path);
  return out;
}

std::string write_temp(const std::string& text) {
  char path[] = "/tmp/torchinfer-anomaly-sidecar-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

}  // namespace

// ---- whole frame -----------------------------------------------------------

TEST(TorchInferAnomaly, AnomalibDictOutputsWithItsMetadataJsonAsTheSidecar) {
  GstHarness* h = torchinfer_harness(
      "model=" + model("anomaly_dict.pt") + " model-config=" + model("anomaly_dict.metadata.json"),
      kCaps);
  // red 102: raw 8, below image_threshold 12; red 204: raw 16, above it.
  for (guint8 r : {102, 204}) {
    GstBuffer* out = gst_harness_push_and_pull(h, uniform_red(r));
    ASSERT_NE(out, nullptr);
    const Verdict v = frame_verdict(out);
    EXPECT_NEAR(v.raw_score, raw_of(r), 1e-5);
    EXPECT_NEAR(v.score, normalised(raw_of(r), 12.0), 1e-6);
    EXPECT_EQ(v.anomalous, r == 204 ? TRUE : FALSE);
    EXPECT_TRUE(v.normalized);
    EXPECT_EQ(v.threshold, 0.5);
    EXPECT_EQ(v.label, r == 204 ? "anomalous" : "normal");
    EXPECT_NEAR(v.confidence, r == 204 ? v.score : 1.0 - v.score, 1e-12);
    // The map stays in the tensor meta, under anomalib's name.
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(tm, nullptr);
    EXPECT_EQ(v.map, "anomaly_map");
    const GstTorchTensor* map = gst_torch_tensor_meta_get_tensor(tm, "anomaly_map");
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(map->n_dims, 4u);
    EXPECT_EQ(map->dims[2], 4);
    EXPECT_NEAR(static_cast<const float*>(map->data)[5], raw_of(r), 1e-5);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, MapAloneIsScoredByItsPeak) {
  GstHarness* h = torchinfer_harness("model=" + model("anomaly_map.pt"), kCaps);
  // One full-red 8x8 square: one cell at 20, the rest 0; the peak is 20.
  GstBuffer* out = gst_harness_push_and_pull(h, painted(kCaps, {{8, 16, 8, 8, 255, 0}}));
  ASSERT_NE(out, nullptr);
  const Verdict v = frame_verdict(out);
  EXPECT_NEAR(v.raw_score, 20.0, 1e-5);
  EXPECT_NEAR(v.score, 0.9, 1e-6);
  EXPECT_TRUE(v.anomalous);
  EXPECT_EQ(v.map, "output");
  gst_buffer_unref(out);
  // A black frame: raw 0, normalised (0 - 12) / 20 + 0.5 = -0.1, clamped to 0.
  out = gst_harness_push_and_pull(h, uniform_red(0));
  const Verdict black = frame_verdict(out);
  EXPECT_EQ(black.score, 0.0);
  EXPECT_FALSE(black.anomalous);
  EXPECT_EQ(black.label, "normal");
  EXPECT_EQ(black.confidence, 1.0);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, TupleOutputsUseTheScoreNotTheMapsPeak) {
  GstHarness* h = torchinfer_harness("model=" + model("anomaly_tuple.pt"), kCaps);
  // Left half red: mean red 0.5 -> score raw 10 (normal), although the
  // map's peak is 20.
  GstBuffer* out = gst_harness_push_and_pull(h, painted(kCaps, {{0, 0, 16, 32, 255, 0}}));
  ASSERT_NE(out, nullptr);
  const Verdict v = frame_verdict(out);
  EXPECT_NEAR(v.raw_score, 10.0, 1e-5);
  EXPECT_NEAR(v.score, 0.4, 1e-6);
  EXPECT_FALSE(v.anomalous);
  EXPECT_EQ(v.map, "output1");
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, SensitivityPropertyShiftsTheDecision) {
  // red 179: raw 14.04, score 0.602: anomalous at 0.5, normal at 1 - 0.3.
  for (const char* sensitivity : {"", " sensitivity=0.3", " sensitivity=0.45"}) {
    GstHarness* h = torchinfer_harness("model=" + model("anomaly_map.pt") + sensitivity, kCaps);
    GstBuffer* out = gst_harness_push_and_pull(h, uniform_red(179));
    ASSERT_NE(out, nullptr);
    const Verdict v = frame_verdict(out);
    EXPECT_NEAR(v.score, normalised(raw_of(179), 12.0), 1e-6);
    const bool strict = std::string(sensitivity) == " sensitivity=0.3";
    EXPECT_EQ(v.anomalous, strict ? FALSE : TRUE) << sensitivity;
    EXPECT_NEAR(v.threshold, strict ? 0.7 : std::string(sensitivity).empty() ? 0.5 : 0.55, 1e-12);
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

TEST(TorchInferAnomaly, WithoutThresholdsRawScoresMeetAnomalyThreshold) {
  for (const char* threshold : {"15", "17"}) {
    GstHarness* h = torchinfer_harness("model=" + model("anomaly_map.pt") +
                                           " model-config=" + model("anomaly_raw.json") +
                                           " anomaly-threshold=" + threshold,
                                       kCaps);
    GstBuffer* out = gst_harness_push_and_pull(h, uniform_red(204));  // raw 16
    ASSERT_NE(out, nullptr);
    const Verdict v = frame_verdict(out);
    EXPECT_FALSE(v.normalized);
    EXPECT_NEAR(v.score, 16.0, 1e-5);  // raw, not normalised
    EXPECT_EQ(v.anomalous, std::string(threshold) == "15" ? TRUE : FALSE);
    // Confidence stays a probability: the score is clamped to 0..1 first.
    EXPECT_EQ(v.confidence, std::string(threshold) == "15" ? 1.0 : 0.0);
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

TEST(TorchInferAnomaly, NanMapsAreInvalidResultsWithoutVerdict) {
  GstHarness* h = torchinfer_harness("model=" + model("anomaly_nan.pt"), kCaps);
  // green: NaN map; red: a finite map again.
  for (bool nan : {true, false, true}) {
    GstBuffer* out = gst_harness_push_and_pull(
        h, painted(kCaps, {{0, 0, 32, 32, static_cast<guint8>(nan ? 0 : 255),
                            static_cast<guint8>(nan ? 255 : 0)}}));
    ASSERT_NE(out, nullptr);
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(tm, nullptr);
    EXPECT_EQ(tm->valid, nan ? FALSE : TRUE);
    EXPECT_EQ(gst_buffer_get_torch_anomaly(out) != nullptr, !nan);
    EXPECT_EQ(gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME) != nullptr, !nan);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, ContradictorySidecarFailsTheStartNamingFileAndKey) {
  const std::string sidecar = write_temp(
      R"({"task": "anomaly", "input_width": 16, "input_height": 16, "image_threshold": 25,
          "min": 0, "max": 20})");
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  g_object_set(e, "model", model("anomaly_map.pt").c_str(), "model-config", sidecar.c_str(),
               nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  const std::string all = r.error.message + " " + r.error.debug;
  EXPECT_NE(all.find(sidecar), std::string::npos) << all;
  EXPECT_NE(all.find("'image_threshold'"), std::string::npos) << all;
  gst_object_unref(e);
  std::remove(sidecar.c_str());
}

TEST(TorchInferAnomaly, SensitivityWithoutThresholdsFailsTheStart) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  g_object_set(e, "model", model("anomaly_map.pt").c_str(), "model-config",
               model("anomaly_raw.json").c_str(), "sensitivity", 0.7, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  const std::string all = r.error.message + " " + r.error.debug;
  EXPECT_NE(all.find("anomaly-threshold"), std::string::npos) << all;
  gst_object_unref(e);
}

TEST(TorchInferAnomaly, PropertiesHaveTheirDefaultsAndRanges) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  gdouble sensitivity = 0, threshold = 0;
  g_object_get(e, "sensitivity", &sensitivity, "anomaly-threshold", &threshold, nullptr);
  EXPECT_EQ(sensitivity, -1.0);
  EXPECT_EQ(threshold, 0.5);
  g_object_set(e, "task", 4, nullptr);  // "anomaly"
  gint task = 0;
  g_object_get(e, "task", &task, nullptr);
  EXPECT_EQ(task, 4);
  GParamSpecDouble* s =
      G_PARAM_SPEC_DOUBLE(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "sensitivity"));
  EXPECT_EQ(s->minimum, -1.0);
  EXPECT_EQ(s->maximum, 1.0);
  gst_object_unref(e);
}

// ---- per part (roi-list) ----------------------------------------------------

TEST(TorchInferAnomaly, FrameWithoutPartsPassesThroughWithoutVerdicts) {
  GstHarness* h = torchinfer_harness(
      "name=anomaly inference-region=roi-list model=" + model("anomaly_map.pt"), kCaps);
  GstBuffer* out = gst_harness_push_and_pull(h, uniform_red(255));
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(rois_of(out).empty());
  EXPECT_EQ(gst_buffer_get_torch_anomaly(out), nullptr);
  EXPECT_EQ(gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out), nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, FiveHundredPartsEachGetTheirOwnVerdict) {
  const std::string caps = "video/x-raw,format=RGB,width=100,height=100,framerate=30/1";
  GstHarness* h = torchinfer_harness(
      "name=anomaly inference-region=roi-list batch-size=8 "
      "batch-timeout=1000 model=" +
          model("anomaly_map.pt"),
      caps);
  // Left half red (anomalous parts), right half black (normal ones).
  GstBuffer* in = painted(caps, {{0, 0, 50, 100, 255, 0}});
  for (int i = 0; i < 500; ++i)
    add_roi(in, (i % 2) * 50 + i % 7, i % 40, 10 + i % 13, 10 + i % 11, i);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  const auto rois = rois_of(out);
  ASSERT_EQ(rois.size(), 500u);
  int wrong = 0, missing = 0;
  for (int i = 0; i < 500; ++i) {
    const GstStructure* a = gst_torch_roi_get_anomaly(rois[i], "anomaly");
    const GstStructure* c = gst_torch_roi_get_classification(rois[i], "anomaly");
    if (!a || !c) {
      ++missing;
      continue;
    }
    gboolean anomalous = FALSE;
    double score = -1;
    gst_structure_get_boolean(a, "anomalous", &anomalous);
    gst_structure_get_double(a, "score", &score);
    const bool red = i % 2 == 0;
    if (anomalous != (red ? TRUE : FALSE) || std::abs(score - (red ? 0.9 : 0.0)) > 1e-6 ||
        std::string(gst_structure_get_string(c, "label")) != (red ? "anomalous" : "normal"))
      ++wrong;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(wrong, 0);
  // No whole-frame verdict in roi-list mode.
  EXPECT_EQ(gst_buffer_get_torch_anomaly(out), nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferAnomaly, PartVerdictCoexistsWithASecondClassifier) {
  const std::string caps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer name=anomaly inference-region=roi-list model=" + model("anomaly_map.pt") +
       " ! torchinfer name=cls inference-region=roi-list model=" + model("channel_classifier.pt"))
          .c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer* in = painted(caps, {{0, 0, 64, 48, 255, 0}});
  add_roi(in, 8, 8, 16, 16, 0);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  const auto rois = rois_of(out);
  ASSERT_EQ(rois.size(), 1u);
  std::vector<std::string> labels;
  gpointer state = nullptr;
  while (const GstStructure* s = gst_torch_roi_iterate_classifications(rois[0], &state))
    labels.push_back(std::string(gst_structure_get_string(s, "element")) + ":" +
                     gst_structure_get_string(s, "label"));
  EXPECT_EQ(labels, (std::vector<std::string>{"anomaly:anomalous", "cls:red"}));
  const GstStructure* a = gst_torch_roi_get_anomaly(rois[0], nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_STREQ(gst_structure_get_string(a, "element"), "anomaly");
  EXPECT_EQ(gst_structure_get_string(a, "model"), model("anomaly_map.pt"));
  EXPECT_EQ(gst_torch_roi_get_anomaly(rois[0], "cls"), nullptr);
  // Its map, through the ROI's tensor meta.
  EXPECT_NE(gst_buffer_get_torch_tensor_meta_for_roi(out, 0, model("anomaly_map.pt").c_str()),
            nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// ---- JSON ---------------------------------------------------------------------

TEST(TorchInferAnomaly, MetaconvertWritesTheFramesAnomalyAndItsRegions) {
  // Two squares: a full-red one (cells (1,2): raw 20) and a 3-cell L of
  // red 153 (raw 12, pixel normalised (12 - 10) / 20 + 0.5 = 0.6).
  std::vector<GstBuffer*> frames = {
      painted(kCaps, {{8, 16, 8, 8, 255, 0}, {16, 0, 16, 8, 153, 0}, {24, 8, 8, 8, 153, 0}}),
      uniform_red(0)};
  const auto lines = json_lines("torchinfer model=" + model("anomaly_tuple.pt"), kCaps, frames,
                                "anomaly-regions=true");
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json& a = lines[0]["anomaly"];
  // The image's score is the mean red: (64 * 1 + 192 * 0.6) / 1024 * 20 =
  // 3.5, normal, while the map (pixel_threshold 10) has anomalous regions.
  const double raw = (64 * 1.0 + 192 * (153 * (1.0f / 255.0f))) / 1024 * 20;
  EXPECT_NEAR(a["raw_score"].get<double>(), raw, 1e-4);
  EXPECT_NEAR(a["score"].get<double>(), normalised(raw, 12.0), 1e-5);
  EXPECT_EQ(a["anomalous"], false);
  ASSERT_EQ(a["regions"].size(), 2u);
  // Largest first: the L (cells (2,0), (3,0), (3,1)) spans frame x 16..32, y 0..16.
  EXPECT_EQ(a["regions"][0]["x_min"], 16.0);
  EXPECT_EQ(a["regions"][0]["y_min"], 0.0);
  EXPECT_EQ(a["regions"][0]["x_max"], 32.0);
  EXPECT_EQ(a["regions"][0]["y_max"], 16.0);
  EXPECT_NEAR(a["regions"][0]["peak"].get<double>(), 0.6, 1e-5);
  EXPECT_EQ(a["regions"][1]["x_min"], 8.0);
  EXPECT_EQ(a["regions"][1]["y_min"], 16.0);
  EXPECT_EQ(a["regions"][1]["x_max"], 16.0);
  EXPECT_EQ(a["regions"][1]["y_max"], 24.0);
  EXPECT_NEAR(a["regions"][1]["peak"].get<double>(), 1.0, 1e-6);
  EXPECT_EQ(lines[0]["classification"][0]["label"], "normal");
  // A black frame: normal, no regions.
  const nlohmann::json& b = lines[1]["anomaly"];
  EXPECT_EQ(b["score"], 0.0);
  EXPECT_EQ(b["raw_score"], 0.0);
  EXPECT_EQ(b["anomalous"], false);
  EXPECT_TRUE(b["regions"].empty());
}

TEST(TorchInferAnomaly, MetaconvertWritesRegionsOnlyWhenAsked) {
  const auto lines = json_lines("torchinfer model=" + model("anomaly_map.pt"), kCaps,
                                {painted(kCaps, {{8, 16, 8, 8, 255, 0}})});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["anomaly"], (nlohmann::json{{"score", lines[0]["anomaly"]["score"]},
                                                 {"raw_score", lines[0]["anomaly"]["raw_score"]},
                                                 {"anomalous", true}}));
  EXPECT_NEAR(lines[0]["anomaly"]["score"].get<double>(), 0.9, 1e-6);
}

TEST(TorchInferAnomaly, MetaconvertWritesEachPartsAnomalyInFrameCoordinates) {
  const std::string caps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";
  // Part 0 at (8, 8) 32x32, fed to the 16x16 input at half size: its red
  // 8x8 square at frame (24, 16) is map cell (2, 1) of the part.
  GstBuffer* in = painted(caps, {{24, 16, 8, 8, 255, 0}});
  gst_buffer_add_torch_detection(in, "part", 0, 0.9, 8, 8, 40, 40, 64, 48);
  gst_buffer_add_torch_detection(in, "part", 0, 0.8, 44, 0, 60, 16, 64, 48);  // all black
  const auto lines = json_lines(
      "torchinfer name=anomaly inference-region=roi-list model=" + model("anomaly_map.pt"), caps,
      {in}, "anomaly-regions=true");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].contains("anomaly")) << "no whole-frame result in roi-list mode";
  const nlohmann::json& d = lines[0]["detections"];
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["anomaly"]["anomalous"], true);
  EXPECT_NEAR(d[0]["anomaly"]["raw_score"].get<double>(), 20.0, 1e-5);
  ASSERT_EQ(d[0]["anomaly"]["regions"].size(), 1u);
  EXPECT_EQ(d[0]["anomaly"]["regions"][0],
            (nlohmann::json{{"x_min", 24.0},
                            {"y_min", 16.0},
                            {"x_max", 32.0},
                            {"y_max", 24.0},
                            {"peak", d[0]["anomaly"]["regions"][0]["peak"]}}));
  EXPECT_EQ(d[0]["classification"][0]["label"], "anomalous");
  EXPECT_EQ(d[1]["anomaly"]["anomalous"], false);
  EXPECT_EQ(d[1]["anomaly"]["score"], 0.0);
  EXPECT_TRUE(d[1]["anomaly"]["regions"].empty());
  EXPECT_EQ(d[1]["classification"][0]["label"], "normal");
  EXPECT_EQ(d[1]["classification"][0]["confidence"], 1.0);
}

// ---- overlay --------------------------------------------------------------------

TEST(TorchInferAnomaly, OverlayBlendsEachAnomalousPartsMapIntoItsBox) {
  const std::string caps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer name=anomaly inference-region=roi-list model=" + model("anomaly_map.pt") +
       " ! torchoverlay show-labels=false")
          .c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  // The part (8, 8) 16x16 is the model's input at scale 1: map cell (2, 1)
  // is frame x 16..20, y 12..16, red there (raw 20, anomalous), black (raw
  // 0, heat 0) elsewhere.
  GstBuffer* in = painted(caps, {{16, 12, 4, 4, 255, 0}});
  add_roi(in, 8, 8, 16, 16, 0);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  GstMapInfo m;
  ASSERT_TRUE(gst_buffer_map(out, &m, GST_MAP_READ));
  auto px = [&](int x, int y) {
    const guint8* p = m.data + y * 192 + x * 3;  // RGB 64 wide: stride 192
    return std::vector<int>{p[0], p[1], p[2]};
  };
  const torchinfer::Rgb cold = torchinfer::heat_colour(0.0), edge = torchinfer::class_colour(0);
  EXPECT_EQ(px(9, 22), (std::vector<int>{torchinfer::blend_sample(0, cold.r, 0.4),
                                         torchinfer::blend_sample(0, cold.g, 0.4),
                                         torchinfer::blend_sample(0, cold.b, 0.4)}));
  EXPECT_EQ(px(16, 13),
            (std::vector<int>{edge.r, edge.g, edge.b}));  // the anomalous cell's outline
  EXPECT_EQ(px(40, 30), (std::vector<int>{0, 0, 0}));     // outside the part
  gst_buffer_unmap(out, &m);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// Results are decoded with the shared model's config: a sharer asking for
// another decision must fail, not be ignored.
TEST(TorchInferAnomaly, SharersDisagreeingOnSensitivityFailClearly) {
  GstHarness* first = torchinfer_harness(
      "model=" + model("anomaly_map.pt") + " model-instance-id=anomaly-share", kCaps);
  gst_harness_play(first);
  GstElement* second = gst_parse_launch(("torchinfer model=" + model("anomaly_map.pt") +
                                         " model-instance-id=anomaly-share sensitivity=0.3")
                                            .c_str(),
                                        nullptr);
  const StartResult r = try_start(second);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("must use the same sensitivity"), std::string::npos)
      << r.error.message;
  gst_object_unref(second);
  gst_harness_teardown(first);
}

// A model that pools its map to one cell gives [N,1,1,1]: a 1x1 map, its
// cell the score (it was refused as "neither class scores nor an anomaly
// map", with no verdict).
TEST(TorchInferAnomaly, OneCellMapIsScoredByItsCell) {
  GstHarness* h = torchinfer_harness("model=" + model("anomaly_one_cell.pt"), kCaps);
  GstBuffer* out = gst_harness_push_and_pull(h, uniform_red(255));  // raw 20
  ASSERT_NE(out, nullptr);
  const Verdict v = frame_verdict(out);
  EXPECT_NEAR(v.raw_score, 20.0, 1e-5);
  EXPECT_NEAR(v.score, 0.9, 1e-6);
  EXPECT_TRUE(v.anomalous);
  EXPECT_EQ(v.map, "output");
  gst_buffer_unref(out);
  out = gst_harness_push_and_pull(h, uniform_red(0));
  EXPECT_FALSE(frame_verdict(out).anomalous);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}
