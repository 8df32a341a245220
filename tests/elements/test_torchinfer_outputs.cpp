// torchinfer with models nobody here wrote: outputs that are NaN, outputs
// that share the model's own state, NHWC inputs and integer scores, and the
// load progress a slow start reports.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;
using nlohmann::json;

namespace {

const char* kGray8 = "video/x-raw,format=GRAY8,width=8,height=8,framerate=30/1";

GstBuffer* filled(const std::string& caps, guint8 value) {
  const GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, value, GST_VIDEO_INFO_SIZE(&info));
  return buf;
}

// label_id of the top-1 classification, -1 if there is none.
int top_label(GstBuffer* buf, double* confidence = nullptr, std::string* label = nullptr) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm) return -1;
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  int id = -1;
  EXPECT_TRUE(gst_structure_get_int(s, "label_id", &id));
  if (confidence) {
    EXPECT_TRUE(gst_structure_get_double(s, "confidence", confidence));
  }
  if (label) *label = gst_structure_get_string(s, "label");
  return id;
}

int count_rois(GstBuffer* buf) {
  int n = 0;
  gpointer iter = nullptr;
  while (gst_buffer_iterate_meta_filtered(buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    ++n;
  return n;
}

std::string source_root() {
  const char* d = std::getenv("TORCHINFER_SOURCE_ROOT");
  return d ? d : ".";
}

}  // namespace

// ---- NaN / infinite outputs ---------------------------------------------------

TEST(TorchInferOutputsErrors, NanFramesAreInvalidAndUnclassified) {
  GstHarness* h = torchinfer_harness("model=" + model("nan_classifier.pt"), kGray8);
  // white: finite scores (label "d"); black: log of a negative mean, NaN;
  // mid-grey 128 is just above 0.5, finite again.
  const std::vector<guint8> values{255, 0, 0, 255, 128};
  const std::vector<bool> valid{true, false, false, true, true};
  for (std::size_t i = 0; i < values.size(); ++i) {
    GstBuffer* out = gst_harness_push_and_pull(h, filled(kGray8, values[i]));
    ASSERT_NE(out, nullptr);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->valid, valid[i] ? TRUE : FALSE) << "frame " << i;
    EXPECT_EQ(m->n_tensors, 1u);  // the tensors are still there to inspect
    std::string label;
    EXPECT_EQ(top_label(out, nullptr, &label), valid[i] ? 3 : -1) << "frame " << i;
    if (valid[i]) {
      EXPECT_EQ(label, "d");
    }
    // A copy keeps the flag.
    GstBuffer* copy = gst_buffer_copy(out);
    EXPECT_EQ(gst_buffer_get_torch_tensor_meta(copy)->valid, m->valid);
    gst_buffer_unref(copy);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferOutputsErrors, TorchNmsEmitsNoBoxesFromInvalidFrames) {
  const char* caps = "video/x-raw,format=RGB,width=64,height=64,framerate=30/1";
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer model=" + model("nan_detector.pt") + " ! torchnms").c_str());
  gst_harness_set_src_caps_str(h, caps);
  for (guint8 v : {255, 0, 255, 0}) {
    GstBuffer* out = gst_harness_push_and_pull(h, filled(caps, v));
    ASSERT_NE(out, nullptr);
    // White: the two candidates; black: NaN boxes, nothing attached.
    EXPECT_EQ(count_rois(out), v == 255 ? 2 : 0) << "value " << int(v);
    EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out)->valid, v == 255 ? TRUE : FALSE);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);
}

TEST(TorchInferOutputsErrors, JsonMarksInvalidFramesOnly) {
  const std::string path = testing::TempDir() + "outputs_invalid.jsonl";
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer model=" + model("nan_classifier.pt") + " ! torchmetaconvert location=" + path)
          .c_str());
  gst_harness_set_src_caps_str(h, kGray8);
  for (guint8 v : {255, 0, 255}) gst_buffer_unref(gst_harness_push_and_pull(h, filled(kGray8, v)));
  gst_harness_teardown(h);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].find("\"valid\""), std::string::npos) << lines[0];
  EXPECT_EQ(lines[2].find("\"valid\""), std::string::npos) << lines[2];
  const json bad = json::parse(lines[1]);
  EXPECT_EQ(bad["valid"], false);
  EXPECT_EQ(bad["classification"], json::array());
  EXPECT_EQ(json::parse(lines[0])["classification"][0]["label_id"], 3);
}

// ---- outputs sharing the model's state ------------------------------------

TEST(TorchInferOutputs, StatefulModelFramesKeepTheirOwnResults) {
  const char* caps = "video/x-raw,format=GRAY8,width=4,height=4,framerate=30/1";
  GstHarness* h = torchinfer_harness("model=" + model("stateful_output.pt"), caps);
  std::vector<GstBuffer*> outs;
  for (int k = 1; k <= 8; ++k) {
    outs.push_back(gst_harness_push_and_pull(h, filled(caps, static_cast<guint8>(10 * k))));
    ASSERT_NE(outs.back(), nullptr);
  }
  // Read only now: every later forward() overwrote the model's buffer.
  for (int k = 1; k <= 8; ++k) {
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(outs[k - 1]);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->tensors[0].dtype, GST_TORCH_DTYPE_FLOAT32);
    EXPECT_FLOAT_EQ(*static_cast<const float*>(m->tensors[0].data), 10.f * k / 255.f)
        << "frame " << k;
    gst_buffer_unref(outs[k - 1]);
  }
  gst_harness_teardown(h);
}

// ---- NHWC model with uint8 scores, no wrapper -----------------------------

TEST(TorchInferOutputs, NhwcLenetWithUint8ScoresReadsTheDigitNine) {
  std::ifstream in(source_root() + "/tests/data/digit_9.pgm", std::ios::binary);
  const std::string pgm((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string header = "P5\n28 28\n255\n";
  ASSERT_EQ(pgm.size(), header.size() + 28 * 28);
  ASSERT_EQ(pgm.substr(0, header.size()), header);
  const char* caps = "video/x-raw,format=GRAY8,width=28,height=28,framerate=30/1";
  GstHarness* h = torchinfer_harness("model=" + model("lenet_nhwc_uint8.pt"), caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 28 * 28, nullptr);
  gst_buffer_fill(buf, 0, pgm.data() + header.size(), 28 * 28);  // stride 28: no padding
  GstBuffer* out = gst_harness_push_and_pull(h, buf);
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->tensors[0].dtype, GST_TORCH_DTYPE_UINT8);
  EXPECT_EQ(static_cast<const guint8*>(m->tensors[0].data)[9], 254);
  double confidence = 0;
  std::string label;
  EXPECT_EQ(top_label(out, &confidence, &label), 9);
  EXPECT_EQ(label, "9");
  EXPECT_DOUBLE_EQ(confidence, 254.0 / 255.0);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferOutputsErrors, NhwcModelFedNchwNamesTheLayout) {
  // The same model with the sidecar's layout overridden back to NCHW: the
  // permute inside sees [1,1,28,28] as NHWC and the convolution refuses it.
  const std::string cfg = testing::TempDir() + "lenet_nchw.json";
  std::ofstream(cfg) << R"({"input_width": 28, "input_height": 28, "channel_order": "gray",
    "mean": [0], "std": [1], "input_layout": "nchw"})";
  GstElement* e = gst_parse_launch(
      ("torchinfer model=" + model("lenet_nhwc_uint8.pt") + " model-config=" + cfg).c_str(),
      nullptr);
  ASSERT_NE(e, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_LIBRARY_ERROR);
  EXPECT_EQ(r.error.code, GST_LIBRARY_ERROR_INIT);
  EXPECT_NE(r.error.message.find("1x1x28x28"), std::string::npos) << r.error.message;
  EXPECT_NE(r.error.message.find("input_layout"), std::string::npos) << r.error.message;
  gst_object_unref(e);
}

TEST(TorchInferOutputsErrors, TwoInputModelsAreRefusedWithTheWayOut) {
  GstElement* e = gst_parse_launch(("torchinfer model=" + model("two_inputs.pt")).c_str(), nullptr);
  ASSERT_NE(e, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_LIBRARY_ERROR);
  EXPECT_NE(r.error.message.find("takes 2 inputs"), std::string::npos) << r.error.message;
  EXPECT_NE(r.error.message.find("wrap the model"), std::string::npos) << r.error.message;
  gst_object_unref(e);
}

// ---- load progress ---------------------------------------------------------

TEST(TorchInferLoad, ProgressMessagesInOrderDuringStart) {
  GstElement* e = gst_parse_launch(
      // fp32: on an AVX512-BF16 CPU auto would add a "precision" stage.
      ("torchinfer batch-size=6 warmup=3 precision=fp32 model=" + model("tiny_classifier.pt"))
          .c_str(),
      nullptr);
  ASSERT_NE(e, nullptr);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  ASSERT_NE(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  gst_element_get_state(e, nullptr, nullptr, GST_CLOCK_TIME_NONE);
  std::vector<std::string> stages;
  std::vector<int> done;
  double last_elapsed = -1;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
    const GstStructure* s = gst_message_get_structure(msg);
    if (gst_structure_has_name(s, "torchinfer-load")) {
      stages.push_back(gst_structure_get_string(s, "stage"));
      int d = -1, total = -1;
      double elapsed = -1;
      EXPECT_TRUE(gst_structure_get_int(s, "done", &d));
      EXPECT_TRUE(gst_structure_get_int(s, "total", &total));
      EXPECT_TRUE(gst_structure_get_double(s, "elapsed-ms", &elapsed));
      EXPECT_EQ(total, 3);  // batch size 1 only, warmup=3 runs
      EXPECT_GE(elapsed, last_elapsed);
      last_elapsed = elapsed;
      EXPECT_EQ(std::string(gst_structure_get_string(s, "model")), model("tiny_classifier.pt"));
      done.push_back(d);
    }
    gst_message_unref(msg);
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"read", "optimize", "warmup", "warmup", "warmup",
                                              "warmup", "timing"}));
  EXPECT_EQ(done, (std::vector<int>{0, 0, 0, 1, 2, 3, 3}));
  gst_element_set_state(e, GST_STATE_NULL);
  gst_element_set_bus(e, nullptr);
  gst_object_unref(bus);
  gst_object_unref(e);
}

// ---- what the element does with them: the once-per-burst warning and
// counter for invalid results, the input-layout property ----

TEST(TorchInferOutputsErrors, InvalidResultsWarnOncePerBurstAndAreCounted) {
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
TEST(TorchInferOutputs, InputLayoutPropertyOverridesTheSidecar) {
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
