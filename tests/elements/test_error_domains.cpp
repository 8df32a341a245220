// One error table (plugin/element-errors.cpp): the domain and code of every
// ErrorKind, and per element one error of each kind it can raise, checked on
// the bus for domain, code and the words a line operator needs.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "element-errors.h"
#include "element_helpers.h"
#include "video-frame.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The first error on `bus` within `timeout` (a hang guard, not a timing).
BusError next_error(GstBus* bus, GstClockTime timeout = 60 * GST_SECOND) {
  BusError r;
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, timeout, GST_MESSAGE_ERROR);
  if (!msg) return r;
  GError* err = nullptr;
  gchar* dbg = nullptr;
  gst_message_parse_error(msg, &err, &dbg);
  r = {true, err->domain, err->code, err->message, dbg ? dbg : ""};
  g_error_free(err);
  g_free(dbg);
  gst_message_unref(msg);
  return r;
}

void expect_error(const BusError& e, GQuark domain, int code,
                  std::initializer_list<const char*> words) {
  ASSERT_TRUE(e.set) << "no error posted";
  EXPECT_EQ(g_quark_to_string(e.domain), g_quark_to_string(domain)) << e.message;
  EXPECT_EQ(e.code, code) << e.message;
  for (const char* w : words)
    EXPECT_NE(e.message.find(w), std::string::npos) << w << ": " << e.message;
}

// Starts `line` (one element with properties) outside a pipeline; the error
// it posted.
BusError start_error(const std::string& line) {
  GstElement* e = gst_parse_launch(line.c_str(), nullptr);
  EXPECT_NE(e, nullptr) << line;
  if (!e) return {};
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << line;
  gst_object_unref(e);
  return r.error;
}

// A harness around a parsed chain with a private bus to read errors from.
struct Chain {
  GstHarness* h;
  GstBus* bus;
  Chain(const std::string& line, const std::string& caps) {
    h = gst_harness_new_parse(line.c_str());
    bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_harness_set_src_caps_str(h, caps.c_str());
  }
  ~Chain() {
    gst_element_set_bus(h->element, nullptr);  // queued messages hold the element
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  GstBuffer* filled(guint8 value) const {
    GstCaps* caps = gst_pad_get_current_caps(h->srcpad);
    GstVideoInfo info;
    gst_video_info_from_caps(&info, caps);
    gst_caps_unref(caps);
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    gst_buffer_memset(buf, 0, value, GST_VIDEO_INFO_SIZE(&info));
    return buf;
  }
  // Pushes frames until one fails (torchinfer hands frames on from its own
  // thread, so a downstream error reaches the upstream push later).
  void push_until_error(guint8 value) const {
    for (int i = 0; i < 200; ++i) {
      if (gst_harness_push(h, filled(value)) != GST_FLOW_OK) return;
      g_usleep(5000);
    }
    ADD_FAILURE() << "the error never reached the source";
  }
};

}  // namespace

// ---- the table ---------------------------------------------------------------

TEST(ErrorTable, EveryKindHasOneDomainAndCode) {
  struct Row {
    ErrorKind kind;
    GQuark domain;
    int code;
  };
  const Row rows[] = {
      {ErrorKind::kNotFound, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND},
      {ErrorKind::kModelInvalid, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT},
      {ErrorKind::kConfigInvalid, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS},
      {ErrorKind::kInvalidArgument, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS},
      {ErrorKind::kStreamData, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE},
      {ErrorKind::kSetupFailed, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT},
      {ErrorKind::kRuntime, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED},
  };
  for (const Row& r : rows) {
    const gst::GstErrorCode c = gst::error_code(r.kind);
    EXPECT_EQ(c.domain, r.domain) << static_cast<int>(r.kind);
    EXPECT_EQ(c.code, r.code) << static_cast<int>(r.kind);
  }
}

TEST(ErrorTable, PostExceptionMapsErrorsByKindAndOthersToTheFallback) {
  GstElement* e = gst_element_factory_make("torchnms", nullptr);
  ASSERT_NE(e, nullptr);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(e, bus);

  gst::post_exception(e, Error(ErrorKind::kNotFound, "labels file 'x' cannot be read"),
                      ErrorKind::kRuntime, "Prefix: ", "the debug part");
  BusError r = next_error(bus, 0);
  expect_error(r, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
               {"Prefix: labels file 'x' cannot be read"});
  EXPECT_NE(r.debug.find("the debug part"), std::string::npos) << r.debug;

  gst::post_exception(e, std::runtime_error("odd failure"), ErrorKind::kRuntime, "Decoding: ");
  expect_error(next_error(bus, 0), GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
               {"Decoding: odd failure"});

  gst::post_exception(e, std::bad_alloc(), ErrorKind::kModelInvalid, "Loading: ");
  expect_error(next_error(bus, 0), GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
               {"Loading: out of memory"});

  gst::post_error(e, ErrorKind::kStreamData, "tensors do not fit");
  r = next_error(bus, 0);
  expect_error(r, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, {"tensors do not fit"});

  gst_element_set_bus(e, nullptr);
  gst_object_unref(bus);
  gst_object_unref(e);
}

// The debug text GStreamer builds for an error starts with where it was
// posted: "file(line): function (): ...". That is the caller's place, not
// element-errors.cpp's, for post_error and post_exception alike.
TEST(ErrorTable, PostedErrorsCarryTheCallersLocation) {
  GstElement* e = gst_element_factory_make("torchnms", nullptr);
  ASSERT_NE(e, nullptr);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  const auto here = [](int line) {
    return std::string(__FILE__) + "(" + std::to_string(line) + "): TestBody (): ";
  };

  const int error_line = __LINE__ + 1;
  gst::post_error(e, ErrorKind::kStreamData, "tensors do not fit", "the details");
  BusError r = next_error(bus, 0);
  EXPECT_EQ(r.debug.rfind(here(error_line), 0), 0u) << r.debug;
  EXPECT_NE(r.debug.find("the details"), std::string::npos) << r.debug;

  const int exception_line = __LINE__ + 1;
  gst::post_exception(e, std::runtime_error("odd failure"), ErrorKind::kRuntime, "Decoding: ");
  r = next_error(bus, 0);
  EXPECT_EQ(r.debug.rfind(here(exception_line), 0), 0u) << r.debug;
  EXPECT_EQ(r.debug.find("element-errors.cpp"), std::string::npos) << r.debug;

  gst_element_set_bus(e, nullptr);
  gst_object_unref(bus);
  gst_object_unref(e);
}

// ---- torchinfer ----------------------------------------------------------------

TEST(ErrorDomains, TorchInferModelNotFound) {
  expect_error(start_error("torchinfer model=/nonexistent/net.pt"), GST_RESOURCE_ERROR,
               GST_RESOURCE_ERROR_NOT_FOUND, {"/nonexistent/net.pt", "not found"});
}

// From the element itself: the check that refused the start, in its own
// file, not the helper that posted the message.
TEST(ErrorDomains, TorchInferErrorNamesThePlaceThatRaisedIt) {
  const BusError r = start_error("torchinfer");
  expect_error(r, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, {"No model file set"});
  EXPECT_NE(r.debug.find("gsttorchinfer.cpp("), std::string::npos) << r.debug;
  EXPECT_NE(r.debug.find("): settings_usable (): "), std::string::npos) << r.debug;
  EXPECT_EQ(r.debug.find("element-errors.cpp"), std::string::npos) << r.debug;
}

TEST(ErrorDomains, TorchInferCorruptModelIsLibraryInit) {
  const std::string bad = write_file("ed_garbage.pt", std::string(4096, '\x7f'));
  expect_error(start_error("torchinfer model=" + bad), GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
               {"ed_garbage.pt"});
}

TEST(ErrorDomains, TorchInferBadSidecarIsSettings) {
  const std::string cfg = write_file("ed_bad.json", R"({"input_width": "wide"})");
  expect_error(
      start_error("torchinfer model=" + model("tiny_classifier.pt") + " model-config=" + cfg),
      GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
      {"Invalid model configuration", "ed_bad.json", "'input_width'"});
}

TEST(ErrorDomains, TorchInferPropertyConfigErrorsAreSettings) {
  // A CPU this process cannot run on, and int8 asked of a float model.
  expect_error(start_error("torchinfer model=" + model("tiny_classifier.pt") + " cores=1000"),
               GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, {"cores '1000'", "taskset"});
  expect_error(start_error("torchinfer model=" + model("tiny_classifier.pt") + " precision=int8"),
               GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, {"precision=int8", "quantize.py"});
}

TEST(ErrorDomains, TorchInferForwardFailingOnAFrameIsStreamFailed) {
  // Loads and warms up on zeros; a white frame makes forward() raise.
  Chain c("torchinfer model=" + model("fails_on_bright.pt"),
          "video/x-raw,format=RGB,width=16,height=12,framerate=30/1");
  gst_harness_push(c.h, c.filled(255));
  expect_error(next_error(c.bus), GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
               {"Inference failed", "frame too bright for this test model"});
}

// ---- torchnms ------------------------------------------------------------------

TEST(ErrorDomains, TorchNmsMissingLabelsIsNotFound) {
  expect_error(start_error("torchnms labels=/nonexistent/ed.labels"), GST_RESOURCE_ERROR,
               GST_RESOURCE_ERROR_NOT_FOUND, {"/nonexistent/ed.labels", "not found"});
}

TEST(ErrorDomains, TorchNmsMalformedSettingsAreSettings) {
  const std::string cfg = write_file("ed_nms_bad.json", "{ not json");
  expect_error(start_error("torchnms model-config=" + cfg), GST_RESOURCE_ERROR,
               GST_RESOURCE_ERROR_SETTINGS, {"ed_nms_bad.json", "not valid JSON"});
  const std::string labels = write_file("ed_empty.labels", "\n\n");
  expect_error(start_error("torchnms labels=" + labels), GST_RESOURCE_ERROR,
               GST_RESOURCE_ERROR_SETTINGS, {"ed_empty.labels", "empty"});
}

TEST(ErrorDomains, TorchNmsTensorsThatDoNotFitTheDecoderAreStreamDecode) {
  Chain c("torchinfer model=" + model("tiny_classifier.pt") + " ! torchnms decoder=yolov5",
          "video/x-raw,format=RGB,width=48,height=32,framerate=30/1");
  c.push_until_error(255);
  expect_error(next_error(c.bus), GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
               {"decoder yolov5 expects", "'output' [1, 5] float32"});
}

// The sidecar named by model-config is read again for the first frame: gone
// by then is NOT_FOUND, damaged is SETTINGS (as at start).
TEST(ErrorDomains, TorchNmsSidecarGoneOrDamagedAfterStart) {
  const char* caps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";
  const std::string src = model("yolo_candidates.json");
  std::ifstream in(src);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string line = "torchinfer model=" + model("yolo_candidates.pt") + " ! torchnms ";
  {
    const std::string cfg = write_file("ed_gone.json", text);
    Chain c(line + "model-config=" + cfg, caps);
    ASSERT_EQ(std::remove(cfg.c_str()), 0);
    c.push_until_error(255);
    expect_error(next_error(c.bus), GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
                 {"ed_gone.json", "not found"});
  }
  {
    const std::string cfg = write_file("ed_damaged.json", text);
    Chain c(line + "model-config=" + cfg, caps);
    write_file("ed_damaged.json", "{ damaged");
    c.push_until_error(255);
    expect_error(next_error(c.bus), GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                 {"ed_damaged.json", "not valid JSON"});
  }
}

// ---- torchmetaconvert ----------------------------------------------------------

TEST(ErrorDomains, TorchMetaConvertCannotOpenIsOpenWrite) {
  expect_error(start_error("torchmetaconvert location=/nonexistent/dir/ed.jsonl"),
               GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_WRITE,
               {"/nonexistent/dir/ed.jsonl", "for writing"});
}

TEST(ErrorDomains, TorchMetaConvertWriteFailureIsWrite) {
  // /dev/full opens, and every flush fails with ENOSPC.
  Chain c("torchmetaconvert location=/dev/full",
          "video/x-raw,format=RGB,width=16,height=12,framerate=30/1");
  EXPECT_EQ(gst_harness_push(c.h, c.filled(0)), GST_FLOW_ERROR);
  const BusError e = next_error(c.bus, 0);
  expect_error(e, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_WRITE, {"Could not write", "/dev/full"});
}

// ---- torchpublish --------------------------------------------------------------

TEST(ErrorDomains, TorchPublishMissingTopicIsSettings) {
  expect_error(start_error("torchpublish"), GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
               {"'topic'"});
}

TEST(ErrorDomains, TorchPublishMissingTlsFileIsNotFound) {
  expect_error(start_error("torchpublish topic=t tls-ca-file=/nonexistent/ed-ca.pem"),
               GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, {"/nonexistent/ed-ca.pem"});
}

TEST(ErrorDomains, TorchPublishInconsistentSettingsAreSettings) {
  expect_error(start_error("torchpublish topic=t password=pw"), GST_RESOURCE_ERROR,
               GST_RESOURCE_ERROR_SETTINGS, {"Invalid MQTT settings", "username"});
}

// ---- torchoverlay --------------------------------------------------------------

// torchoverlay raises no error a pipeline can provoke (its caps admit exactly
// the formats it draws on); what it accepts is the core's format table.
// The 8-bit formats of the core's table: no Bayer or 16-bit mono (draw on
// a converted branch); torchinfer's template adds those.
TEST(ErrorDomains, TorchOverlayAcceptsExactlyTheDrawableFormats) {
  GstElement* e = gst_element_factory_make("torchoverlay", nullptr);
  ASSERT_NE(e, nullptr);
  GstCaps* want = gst::drawable_video_caps();
  for (const char* name : {"sink", "src"}) {
    GstPadTemplate* t = gst_element_get_pad_template(e, name);
    ASSERT_NE(t, nullptr) << name;
    GstCaps* have = gst_pad_template_get_caps(t);
    EXPECT_TRUE(gst_caps_is_equal(have, want)) << name;
    gst_caps_unref(have);
  }
  // The template the element had before its formats came from the table.
  GstCaps* gst_made = gst_caps_from_string(GST_VIDEO_CAPS_MAKE(
      "{ YUY2, UYVY, NV12, NV21, I420, YV12, RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, "
      "ABGR, GRAY8 }"));
  EXPECT_TRUE(gst_caps_is_equal(want, gst_made));
  GstCaps* all = gst::supported_video_caps();
  GstCaps* camera = gst_caps_from_string(
      GST_VIDEO_CAPS_MAKE("{ YUY2, UYVY, NV12, NV21, I420, YV12, RGB, BGR, RGBx, BGRx, xRGB, xBGR, "
                          "RGBA, BGRA, ARGB, ABGR, GRAY8, GRAY16_LE }") "; video/x-bayer, "
                                                                        "format=(string){ rggb, "
                                                                        "bggr, grbg, gbrg }, "
                                                                        "width=" GST_VIDEO_SIZE_RANGE
                                                                        ", height=" GST_VIDEO_SIZE_RANGE
                                                                        ", framerate=" GST_VIDEO_FPS_RANGE);
  EXPECT_TRUE(gst_caps_is_equal(all, camera)) << gst_caps_to_string(all);
  gst_caps_unref(camera);
  gst_caps_unref(all);
  gst_caps_unref(gst_made);
  gst_caps_unref(want);
  gst_object_unref(e);
}
