// torchnms decoder=yolov8-obb in a pipeline: the "rotated_box" ROI param
// from a fixed-output model (exact), a random-weight oriented-box head
// against models/obb_reference.py (angle within 1 degree, centre within 1
// px), and torchinfer roi-list's deskewed crop of a rotated detection,
// read back through roi_identity.pt (exact frame coordinates on a ramp).
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string rgb_caps(int w, int h) {
  return "video/x-raw,format=RGB,width=" + std::to_string(w) + ",height=" + std::to_string(h) +
         ",framerate=30/1";
}

// An RGB frame of value(x, y, channel).
template <typename F>
GstBuffer* frame_of(int w, int h, F value) {
  const GstVideoInfo info = info_of(rgb_caps(w, h));
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame f;
  EXPECT_TRUE(gst_video_frame_map(&f, const_cast<GstVideoInfo*>(&info), buf, GST_MAP_WRITE));
  auto* data = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) data[y * stride + x * 3 + c] = value(x, y, c);
  gst_video_frame_unmap(&f);
  return buf;
}

// models/make_obb_test_models.py's pattern().
GstBuffer* pattern(int w, int h) {
  return frame_of(w, h, [](int x, int y, int c) {
    std::uint32_t v = static_cast<std::uint32_t>(x) * 374761393u +
                      static_cast<std::uint32_t>(y) * 668265263u +
                      static_cast<std::uint32_t>(c) * 2246822519u;
    v = (v ^ (v >> 13)) * 1274126177u;
    return static_cast<guint8>(v >> 24);
  });
}

struct Found {
  GstTorchDetection det;
  GstTorchRotatedBox rot;
  GstVideoRegionOfInterestMeta* roi;
};

std::vector<Found> rotated_detections(GstBuffer* buf) {
  std::vector<Found> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    Found f{};
    f.roi = roi;
    EXPECT_TRUE(gst_torch_detection_from_roi(roi, &f.det));
    EXPECT_TRUE(gst_torch_roi_get_rotated_box(roi, &f.rot)) << "ROI " << roi->id;
    out.push_back(f);
  }
  return out;
}

GstHarness* detector(const std::string& model_name, const std::string& caps,
                     const std::string& infer_props = "", const std::string& tail = "") {
  const std::string line = "torchinfer model=" + model(model_name) + " " + infer_props +
                           " ! torchnms name=nms" + (tail.empty() ? "" : " ! " + tail);
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  return h;
}

double angle_diff(double a, double b) {  // modulo 180 degrees
  const double d = std::fmod(std::abs(a - b), 180.0);
  return std::min(d, 180.0 - d);
}

}  // namespace

TEST(TorchNmsObb, FixedOutputGivesExactRotatedBoxes) {
  // Model input 320x320, frame 640x640: everything doubles.
  GstHarness* h = detector("obb_fixed.pt", rgb_caps(640, 640));
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  GstBuffer* first = gst_harness_push_and_pull(h, pattern(640, 640));
  ASSERT_NE(first, nullptr);
  gst_buffer_unref(first);
  GstBuffer* out = gst_harness_push_and_pull(h, pattern(640, 640));
  ASSERT_NE(out, nullptr);
  // The zero-width anchor: counted on both frames, said once.
  GstElement* nms = gst_bin_get_by_name(GST_BIN(h->element), "nms");
  ASSERT_NE(nms, nullptr);
  GstStructure* stats = nullptr;
  g_object_get(nms, "stats", &stats, nullptr);
  guint64 invalid = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "invalid", &invalid));
  EXPECT_EQ(invalid, 2u);
  gst_structure_free(stats);
  gst_object_unref(nms);
  int warnings = 0;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    ++warnings;
    gst_message_unref(m);
  }
  EXPECT_EQ(warnings, 1);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  const auto d = rotated_detections(out);
  // The weaker neighbour of the first is suppressed; the crossed pair at
  // +-45 degrees stays (their axis-aligned boxes overlap by 0.6).
  const struct {
    const char* label;
    double conf, cx, cy, w, h, angle;
  } want[] = {{"bracket", 0.9, 200, 160, 120, 40, 30},
              {"washer", 0.7, 440, 400, 80, 80, -45},
              {"bracket", 0.6, 320, 520, 200, 20, 45},
              {"bracket", 0.5, 340, 540, 200, 20, -45}};
  ASSERT_EQ(d.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_STREQ(d[i].det.label, want[i].label) << i;
    EXPECT_NEAR(d[i].det.confidence, want[i].conf, 1e-6) << i;
    EXPECT_NEAR(d[i].rot.cx, want[i].cx, 1e-3) << i;
    EXPECT_NEAR(d[i].rot.cy, want[i].cy, 1e-3) << i;
    EXPECT_NEAR(d[i].rot.width, want[i].w, 1e-3) << i;
    EXPECT_NEAR(d[i].rot.height, want[i].h, 1e-3) << i;
    EXPECT_NEAR(d[i].rot.angle, want[i].angle, 1e-3) << i;
  }
  // The ROI and the detection box are the rotated box's bounds.
  const double a = kPi / 6;
  const double hw = (std::cos(a) * 120 + std::sin(a) * 40) / 2;
  const double hh = (std::sin(a) * 120 + std::cos(a) * 40) / 2;
  EXPECT_NEAR(d[0].det.x_min * 640, 200 - hw, 1e-3);
  EXPECT_NEAR(d[0].det.y_max * 640, 160 + hh, 1e-3);
  EXPECT_EQ(d[0].roi->x, static_cast<guint>(std::floor(200 - hw)));
  EXPECT_EQ(d[0].roi->y + d[0].roi->h, static_cast<guint>(std::ceil(160 + hh)));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchNmsObb, RandomHeadMatchesThePythonReference) {
  std::ifstream in(model("obb_head.expected.json"));
  ASSERT_TRUE(in) << "obb_head.expected.json (make_obb_test_models.py)";
  const nlohmann::json want = nlohmann::json::parse(in);
  const struct {
    const char* name;
    int w, h;
    const char* props;
  } cases[] = {{"square", 640, 640, ""}, {"letterbox", 1280, 960, "keep-aspect-ratio=true"}};
  for (const auto& c : cases) {
    const auto& w = want.at(c.name);
    const std::string thresholds =
        "confidence-threshold=" + std::to_string(w.at("confidence_threshold").get<double>()) +
        " iou-threshold=" + std::to_string(w.at("iou_threshold").get<double>());
    // The reference decodes and suppresses overlaps; containment
    // suppression (suppress-contained) is torchnms' own, tested apart.
    const std::string line = "torchinfer model=" + model("obb_head.pt") + " precision=fp32 " +
                             c.props + " ! torchnms suppress-contained=0 " + thresholds;
    GstHarness* h = gst_harness_new_parse(line.c_str());
    gst_harness_set_src_caps_str(h, rgb_caps(c.w, c.h).c_str());
    GstBuffer* out = gst_harness_push_and_pull(h, pattern(c.w, c.h));
    ASSERT_NE(out, nullptr);
    const auto got = rotated_detections(out);
    const auto& ref = w.at("detections");
    ASSERT_EQ(got.size(), ref.size()) << c.name;
    ASSERT_GE(got.size(), 5u);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto& r = ref[i];
      EXPECT_EQ(got[i].det.label_id, r.at("label_id").get<int>()) << c.name << " " << i;
      EXPECT_NEAR(got[i].det.confidence, r.at("confidence").get<double>(), 1e-4);
      EXPECT_LE(std::hypot(got[i].rot.cx - r.at("cx").get<double>(),
                           got[i].rot.cy - r.at("cy").get<double>()),
                1.0)
          << c.name << " " << i;
      EXPECT_LE(angle_diff(got[i].rot.angle, r.at("angle").get<double>()), 1.0)
          << c.name << " " << i;
      EXPECT_NEAR(got[i].rot.width, r.at("width").get<double>(), 1.0);
      EXPECT_NEAR(got[i].rot.height, r.at("height").get<double>(), 1.0);
    }
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

// Frame R = x, G = y: the crop's values are the frame points sampled.
GstBuffer* ramp(int w, int h) {
  return frame_of(w, h, [](int x, int y, int c) {
    return static_cast<guint8>(c == 0 ? x : c == 1 ? y : 128);
  });
}

// The roi_identity crop (16x12, NCHW floats 0..1) of the first bracket.
std::vector<float> crop_of_first(const std::string& roi_props, GstTorchRotatedBox* rot,
                                 GstVideoRegionOfInterestMeta* box) {
  GstHarness* h = detector("obb_fixed.pt", rgb_caps(256, 256), "",
                           "torchinfer model=" + model("roi_identity.pt") +
                               " inference-region=roi-list object-class=bracket " + roi_props);
  GstBuffer* out = gst_harness_push_and_pull(h, ramp(256, 256));
  EXPECT_NE(out, nullptr);
  std::vector<float> v;
  if (!out) return v;
  const auto d = rotated_detections(out);
  EXPECT_EQ(d.size(), 4u);
  *rot = d.at(0).rot;
  *box = *d.at(0).roi;
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, d[0].roi->id, nullptr);
  EXPECT_NE(t, nullptr);
  if (t) {
    const auto* f = static_cast<const float*>(t->tensors[0].data);
    v.assign(f, f + 3 * 12 * 16);
  }
  gst_buffer_unref(out);
  gst_harness_teardown(h);
  return v;
}

TEST(TorchInferDeskew, RoiListCutsTheRotatedBoxUpright) {
  GstTorchRotatedBox rot;
  GstVideoRegionOfInterestMeta roi;
  const std::vector<float> v = crop_of_first("", &rot, &roi);
  ASSERT_EQ(v.size(), 3u * 12 * 16);
  // 320 -> 256: the bracket is (80, 64) 48 x 16 at 30 degrees.
  EXPECT_NEAR(rot.cx, 80, 1e-3);
  EXPECT_NEAR(rot.width, 48, 1e-3);
  EXPECT_NEAR(rot.angle, 30, 1e-3);
  const double a = rot.angle * kPi / 180;
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 16; ++x) {
      const double bu = ((x + 0.5) / 16 - 0.5) * rot.width,
                   bv = ((y + 0.5) / 12 - 0.5) * rot.height;
      const double fx = rot.cx + bu * std::cos(a) - bv * std::sin(a);
      const double fy = rot.cy + bu * std::sin(a) + bv * std::cos(a);
      ASSERT_NEAR(v[0 * 192 + y * 16 + x] * 255, fx - 0.5, 5e-3) << x << "," << y;
      ASSERT_NEAR(v[1 * 192 + y * 16 + x] * 255, fy - 0.5, 5e-3) << x << "," << y;
    }
}

TEST(TorchInferDeskew, DeskewFalseCutsTheBoxAroundIt) {
  GstTorchRotatedBox rot;
  GstVideoRegionOfInterestMeta roi;
  const std::vector<float> v = crop_of_first("deskew=false", &rot, &roi);
  ASSERT_EQ(v.size(), 3u * 12 * 16);
  // Area resize of a ramp: each pixel's mean is the ramp at its centre.
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 16; ++x) {
      EXPECT_NEAR(v[y * 16 + x] * 255, roi.x + (x + 0.5) * roi.w / 16.0 - 0.5, 0.05);
      EXPECT_NEAR(v[192 + y * 16 + x] * 255, roi.y + (y + 0.5) * roi.h / 12.0 - 0.5, 0.05);
    }
}

TEST(TorchNmsObb, WrongChannelCountIsAClearStreamError) {
  // obb_fixed gives 7 channels; three labels call for 8.
  const char* path = "obb_wrong_labels.txt";
  {
    std::ofstream f(path);
    f << "a\nb\nc\n";
  }
  const std::string line =
      "torchinfer model=" + model("obb_fixed.pt") + " ! torchnms name=nms labels=" + path;
  GstHarness* h = gst_harness_new_parse(line.c_str());
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, rgb_caps(64, 64).c_str());
  GstFlowReturn ret = GST_FLOW_OK;
  for (int i = 0; i < 200 && ret == GST_FLOW_OK; ++i) {
    ret = gst_harness_push(h, pattern(64, 64));
    g_usleep(5000);
  }
  EXPECT_EQ(ret, GST_FLOW_ERROR);
  bool found = false;
  while (GstMessage* m = gst_bus_pop(bus)) {
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
      GError* err = nullptr;
      gst_message_parse_error(m, &err, nullptr);
      EXPECT_EQ(err->domain, GST_STREAM_ERROR);
      found = found || std::string(err->message).find("3 classes (the labels), so 8 channels") !=
                           std::string::npos;
      g_error_free(err);
    }
    gst_message_unref(m);
  }
  EXPECT_TRUE(found);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  std::remove(path);
}
