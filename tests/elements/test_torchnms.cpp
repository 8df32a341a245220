// torchnms: one region-of-interest meta per detection, video untouched,
// properties over the sidecar, and each failure reported once.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;

namespace {

const char* kCaps = "video/x-raw,format=RGB,width=640,height=512,framerate=30/1";

GstHarness* chain(const std::string& nms_props,
                  const std::string& model_name = "yolo_candidates.pt",
                  const std::string& caps = kCaps) {
  const std::string line = "torchinfer model=" + model(model_name) + " ! torchnms " + nms_props;
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  return h;
}

GstBuffer* white(const std::string& caps = kCaps) {
  const GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, 255, GST_VIDEO_INFO_SIZE(&info));
  return buf;
}

// torchinfer hands frames on from its own thread, so a downstream error
// reaches the upstream push one frame later. Pushes until one fails, then
// n more that must fail too.
void push_until_error(GstHarness* h, const std::string& caps, int n_after) {
  int pushes = 0;
  while (gst_harness_push(h, white(caps)) == GST_FLOW_OK) {
    ASSERT_LT(++pushes, 200) << "downstream error never reached the source";
    g_usleep(5000);
  }
  for (int i = 0; i < n_after; ++i) EXPECT_EQ(gst_harness_push(h, white(caps)), GST_FLOW_ERROR);
}

std::vector<GstTorchDetection> detections(GstBuffer* buf) {
  std::vector<GstTorchDetection> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    GstTorchDetection d;
    EXPECT_TRUE(
        gst_torch_detection_from_roi(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), &d));
    out.push_back(d);
  }
  return out;
}

std::size_t count_after(const std::string& nms_props) {
  GstHarness* h = chain(nms_props);
  GstBuffer* out = gst_harness_push_and_pull(h, white());
  const std::size_t n = detections(out).size();
  gst_buffer_unref(out);
  gst_harness_teardown(h);
  return n;
}

struct Messages {
  int errors = 0, warnings = 0;
  GQuark domain = 0;
  int code = 0;
  std::string error;
};

Messages drain(GstBus* bus) {
  Messages m;
  while (GstMessage* msg = gst_bus_pop(bus)) {
    GError* err = nullptr;
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      gst_message_parse_error(msg, &err, nullptr);
      if (!m.errors++) m.domain = err->domain, m.code = err->code, m.error = err->message;
    } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning(msg, &err, nullptr);
      m.warnings++;
    }
    if (err) g_error_free(err);
    gst_message_unref(msg);
  }
  return m;
}

GstBus* watch(GstHarness* h) {
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  return bus;
}

}  // namespace

TEST(TorchNms, OneRoiPerDetectionAndVideoUntouched) {
  GstHarness* h = chain("");
  GstBuffer* in = white();
  GstBuffer* expected = gst_buffer_copy_deep(in);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  const auto d = detections(out);
  ASSERT_EQ(d.size(), 6u);
  const char* labels[] = {"bolt", "nut", "bolt", "nut", "washer", "bolt"};
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_STREQ(d[i].label, labels[i]) << i;
  // Candidate 4 (model box 140,108-180,148) at scale 0.5: pixels 280,216-360,296.
  EXPECT_DOUBLE_EQ(d[0].x_min, 280.0 / 640);
  EXPECT_DOUBLE_EQ(d[0].y_max, 296.0 / 512);
  EXPECT_EQ(d[2].label_id, 0);
  EXPECT_DOUBLE_EQ(d[2].confidence, double(0.9f));
  auto* roi = gst_buffer_get_video_region_of_interest_meta(out);
  ASSERT_NE(roi, nullptr);
  EXPECT_EQ(roi->roi_type, g_quark_from_string("bolt"));
  EXPECT_EQ(roi->x, 280u);
  EXPECT_EQ(roi->y, 216u);
  EXPECT_EQ(roi->w, 80u);
  EXPECT_EQ(roi->h, 80u);
  EXPECT_EQ(roi->id, 0);
  GstMapInfo a, b;
  gst_buffer_map(out, &a, GST_MAP_READ);
  gst_buffer_map(expected, &b, GST_MAP_READ);
  ASSERT_EQ(a.size, b.size);
  EXPECT_EQ(std::memcmp(a.data, b.data, a.size), 0);
  gst_buffer_unmap(out, &a);
  gst_buffer_unmap(expected, &b);
  gst_buffer_unref(out);
  gst_buffer_unref(expected);
  GstElement* nms = gst_bin_get_by_name(GST_BIN(h->element), "torchnms0");
  if (nms) {
    guint64 n = 0;
    g_object_get(nms, "detections", &n, nullptr);
    EXPECT_EQ(n, 6u);
    gst_object_unref(nms);
  }
  gst_harness_teardown(h);
}

TEST(TorchNms, StatsCountFramesDetectionsAndDecodeTime) {
  GstHarness* h = chain("name=nms stats-interval=100000");
  GstBus* bus = watch(h);
  for (int i = 0; i < 3; ++i) gst_buffer_unref(gst_harness_push_and_pull(h, white()));
  GstElement* nms = gst_bin_get_by_name(GST_BIN(h->element), "nms");
  ASSERT_NE(nms, nullptr);
  GstStructure* s = nullptr;
  g_object_get(nms, "stats", &s, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(gst_structure_has_name(s, "torchnms-stats"));
  guint64 frames = 0, dets = 0, contained = 1;
  double p50 = -1, p95 = -1, p99 = -1;
  ASSERT_TRUE(gst_structure_get(s, "frames", G_TYPE_UINT64, &frames, "detections", G_TYPE_UINT64,
                                &dets, "contained", G_TYPE_UINT64, &contained, "decode-ms-p50",
                                G_TYPE_DOUBLE, &p50, "decode-ms-p95", G_TYPE_DOUBLE, &p95,
                                "decode-ms-p99", G_TYPE_DOUBLE, &p99, nullptr));
  gst_structure_free(s);
  EXPECT_EQ(frames, 3u);
  EXPECT_EQ(dets, 18u);      // 6 a frame
  EXPECT_EQ(contained, 0u);  // no box of the test model lies inside another of its class
  EXPECT_GT(p50, 0.0);
  EXPECT_LE(p50, p95);
  EXPECT_LE(p95, p99);
  EXPECT_LT(p99, 1000.0);
  // The interval is far off: the only message is the one at EOS.
  EXPECT_EQ(gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT), nullptr);
  gst_harness_push_event(h, gst_event_new_eos());
  GstMessage* msg = wait_element_message(bus, "torchnms-stats");
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(GST_MESSAGE_SRC(msg), GST_OBJECT(nms));
  guint64 eos_frames = 0;
  EXPECT_TRUE(gst_structure_get_uint64(gst_message_get_structure(msg), "frames", &eos_frames));
  EXPECT_EQ(eos_frames, 3u);
  gst_message_unref(msg);
  gst_object_unref(nms);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(TorchNms, StatsMessagesFollowTheInterval) {
  GstHarness* h = chain("name=nms stats-interval=1");
  GstBus* bus = watch(h);
  for (int i = 0; i < 4; ++i) {
    g_usleep(2000);  // longer than the interval, so every frame is due
    gst_buffer_unref(gst_harness_push_and_pull(h, white()));
  }
  guint64 last = 0;
  int n = 0;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
    const GstStructure* st = gst_message_get_structure(m);
    if (gst_structure_has_name(st, "torchnms-stats")) {
      guint64 f = 0;
      EXPECT_TRUE(gst_structure_get_uint64(st, "frames", &f));
      EXPECT_EQ(f, last + 1);  // one per frame, counting up
      last = f;
      ++n;
    }
    gst_message_unref(m);
  }
  EXPECT_EQ(n, 4);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(TorchNms, PropertiesOverrideTheSidecar) {
  EXPECT_EQ(count_after("confidence-threshold=0.92"), 2u);  // 1.0 and 0.95
  EXPECT_EQ(count_after("max-detections=3"), 3u);
  EXPECT_EQ(count_after("class-agnostic=true"), 5u);  // the nut over the bolt goes
  EXPECT_EQ(count_after("iou-threshold=0.9"), 7u);    // IoU 0.82 no longer suppresses
}

TEST(TorchNms, LabelsPropertyRenamesClasses) {
  const std::string path = testing::TempDir() + "nms_labels.txt";
  std::ofstream(path) << "A\nB\nC\n";
  GstHarness* h = chain("labels=" + path);
  GstBuffer* out = gst_harness_push_and_pull(h, white());
  const auto d = detections(out);
  ASSERT_EQ(d.size(), 6u);
  EXPECT_STREQ(d[0].label, "A");
  EXPECT_STREQ(d[1].label, "B");
  EXPECT_STREQ(d[4].label, "C");
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchNms, ClassificationDecoderReplacesTheClassificationMeta) {
  GstHarness* h = chain("decoder=classification", "tiny_classifier.pt",
                        "video/x-raw,format=RGB,width=48,height=32");
  GstBuffer* out = gst_harness_push_and_pull(h, white("video/x-raw,format=RGB,width=48,height=32"));
  int n = 0;
  gpointer iter = nullptr;
  const GstMetaInfo* cls_info = gst_meta_get_info(GST_TORCH_CLASSIFICATION_META_NAME);
  ASSERT_NE(cls_info, nullptr);
  while (GstMeta* m = gst_buffer_iterate_meta(out, &iter)) n += m->info == cls_info;
  EXPECT_EQ(n, 1);
  GstCustomMeta* cm = gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME);
  ASSERT_NE(cm, nullptr);
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(s, "labels")), 3u);  // top_k 3
  EXPECT_EQ(gst_buffer_get_video_region_of_interest_meta(out), nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchNmsErrors, MissingTensorMetaPassesThroughWithOneWarning) {
  GstHarness* h = gst_harness_new("torchnms");
  gst_harness_set_src_caps_str(h, kCaps);
  GstBus* bus = watch(h);
  const GstVideoInfo info = info_of(kCaps);
  for (unsigned i = 0; i < 3; ++i) {
    GstBuffer* in = make_video_buffer(info, i);
    GstBuffer* expected = gst_buffer_copy_deep(in);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    GstMapInfo a, b;
    gst_buffer_map(out, &a, GST_MAP_READ);
    gst_buffer_map(expected, &b, GST_MAP_READ);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.size), 0);
    gst_buffer_unmap(out, &a);
    gst_buffer_unmap(expected, &b);
    EXPECT_EQ(gst_buffer_get_video_region_of_interest_meta(out), nullptr);
    gst_buffer_unref(out);
    gst_buffer_unref(expected);
  }
  const Messages m = drain(bus);
  EXPECT_EQ(m.warnings, 1);
  EXPECT_EQ(m.errors, 0);
  gst_element_set_bus(h->element, nullptr);  // queued messages hold the element
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

TEST(TorchNmsErrors, WrongLayoutIsOneErrorNotOnePerFrame) {
  GstHarness* h =
      chain("decoder=yolov5", "tiny_classifier.pt", "video/x-raw,format=RGB,width=48,height=32");
  GstBus* bus = watch(h);
  push_until_error(h, "video/x-raw,format=RGB,width=48,height=32", 2);
  const Messages m = drain(bus);
  EXPECT_EQ(m.errors, 1);
  EXPECT_EQ(m.domain, GST_STREAM_ERROR);
  EXPECT_EQ(m.code, GST_STREAM_ERROR_DECODE);
  EXPECT_NE(m.error.find("decoder yolov5 expects a float tensor [1, anchors, 5 + classes]"),
            std::string::npos)
      << m.error;
  EXPECT_NE(m.error.find("'output' [1, 5] float32"), std::string::npos) << m.error;
  gst_element_set_bus(h->element, nullptr);  // queued messages hold the element
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

TEST(TorchNmsErrors, NoDecoderForADetectionModelSays) {
  const std::string cfg = testing::TempDir() + "nms_nodecoder.json";
  std::ofstream(cfg) << R"({"task": "detection"})";
  GstHarness* h = chain("model-config=" + cfg);
  GstBus* bus = watch(h);
  push_until_error(h, kCaps, 2);
  const Messages m = drain(bus);
  EXPECT_EQ(m.errors, 1);
  EXPECT_NE(m.error.find("No decoder for model"), std::string::npos) << m.error;
  gst_element_set_bus(h->element, nullptr);  // queued messages hold the element
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

TEST(TorchNmsErrors, MissingLabelsOrConfigFailsTheStart) {
  for (const char* prop : {"labels", "model-config"}) {
    GstElement* e = gst_element_factory_make("torchnms", nullptr);
    g_object_set(e, prop, "/nonexistent/file", nullptr);
    const StartResult r = try_start(e);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << prop;
    ASSERT_TRUE(r.error.set) << prop;
    EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR) << prop;
    EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_NOT_FOUND) << prop;
    EXPECT_NE(r.error.message.find("/nonexistent/file"), std::string::npos) << r.error.message;
    gst_object_unref(e);
  }
}
