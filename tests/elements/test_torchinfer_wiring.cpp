// What the element itself does with the pieces in torchinfer-results.h and
// the settings: the once-per-burst warning and counter for invalid results,
// and the input-layout property.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;

namespace {

const char* kGray8 = "video/x-raw,format=GRAY8,width=8,height=8,framerate=30/1";

GstBuffer* filled(const std::string& caps, guint8 value) {
  const GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, value, GST_VIDEO_INFO_SIZE(&info));
  return buf;
}

}  // namespace

TEST(TorchInferWiringErrors, InvalidResultsWarnOncePerBurstAndAreCounted) {
  GstHarness* h = torchinfer_harness("model=" + model("nan_classifier.pt"), kGray8);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  // Bursts of 3 and 2 black (NaN) frames between white ones.
  for (guint8 v : {255, 0, 0, 0, 255, 255, 0, 0, 255})
    gst_buffer_unref(gst_harness_push_and_pull(h, filled(kGray8, v)));
  std::vector<std::string> warnings;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gst_message_parse_warning(msg, &err, nullptr);
    EXPECT_EQ(err->domain, GST_STREAM_ERROR);
    EXPECT_EQ(err->code, GST_STREAM_ERROR_FAILED);
    warnings.push_back(err->message);
    g_error_free(err);
    gst_message_unref(msg);
  }
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("NaN or infinite"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("marked invalid"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("1 invalid so far"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("previous burst had 3 such frames"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("4 invalid so far"), std::string::npos) << warnings[1];
  GstStructure* stats = nullptr;
  g_object_get(h->element, "stats", &stats, nullptr);
  ASSERT_NE(stats, nullptr);
  guint64 invalid = 0, inferred = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "frames-invalid", &invalid));
  EXPECT_TRUE(gst_structure_get_uint64(stats, "frames-inferred", &inferred));
  EXPECT_EQ(invalid, 5u);
  EXPECT_EQ(inferred, 9u);
  gst_structure_free(stats);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

// The LeNet test model without its sidecar's layout: only input-layout=nhwc
// makes it run, and nchw over the sidecar's nhwc breaks it.
TEST(TorchInferWiring, InputLayoutPropertyOverridesTheSidecar) {
  const std::string cfg = testing::TempDir() + "lenet_no_layout.json";
  std::ofstream(cfg) << R"({"input_width": 28, "input_height": 28, "channel_order": "gray",
    "mean": [0], "std": [1], "labels": ["0","1","2","3","4","5","6","7","8","9"]})";
  const std::string base = "model=" + model("lenet_nhwc_uint8.pt");
  GstHarness* h = torchinfer_harness(base + " model-config=" + cfg + " input-layout=nhwc",
                                     "video/x-raw,format=GRAY8,width=28,height=28,framerate=30/1");
  GstBuffer* out = gst_harness_push_and_pull(
      h, filled("video/x-raw,format=GRAY8,width=28,height=28,framerate=30/1", 0));
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->tensors[0].dtype, GST_TORCH_DTYPE_UINT8);
  EXPECT_EQ(m->tensors[0].dims[1], 10);
  gst_buffer_unref(out);
  gst_harness_teardown(h);

  for (const std::string& props : {base + " model-config=" + cfg, base + " input-layout=nchw"}) {
    GstElement* e = gst_parse_launch(("torchinfer " + props).c_str(), nullptr);
    ASSERT_NE(e, nullptr);
    const StartResult r = try_start(e);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << props;
    EXPECT_EQ(r.error.domain, GST_LIBRARY_ERROR) << props;
    EXPECT_NE(r.error.message.find("1x1x28x28"), std::string::npos) << r.error.message;
    gst_object_unref(e);
  }

  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  GParamSpec* p = g_object_class_find_property(G_OBJECT_GET_CLASS(e), "input-layout");
  ASSERT_NE(p, nullptr);
  GEnumClass* k = G_PARAM_SPEC_ENUM(p)->enum_class;
  for (const char* nick : {"auto", "nchw", "nhwc"})
    EXPECT_NE(g_enum_get_value_by_nick(k, nick), nullptr) << nick;
  gst_object_unref(e);
}
