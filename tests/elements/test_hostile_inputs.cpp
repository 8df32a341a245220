// Hostile files given to the elements (issue 14): JSON nested 100k levels
// deep (used to overflow the stack), FIFOs (used to block the start
// forever), labels that are not UTF-8, torch.save() files, and a full disk
// under torchmetaconvert. Each is one error in the agreed domain, or a
// warning where the element keeps running.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "element_helpers.h"

using namespace torchinfer::test;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "elem_hostile_" + name;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string deep_json() {
  return "{\"mean\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
}

std::string make_fifo(const std::string& name) {
  const std::string path = temp_path(name);
  ::unlink(path.c_str());
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
  return path;
}

// A copy of a test model as `name`.pt with `sidecar` as its <model>.json.
std::string model_with_sidecar(const std::string& name, const std::string& sidecar) {
  std::ifstream in(model("tiny_classifier.pt"), std::ios::binary);
  const std::string path = temp_path(name + ".pt");
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  write_temp(name + ".json", sidecar);
  return path;
}

void expect_start_error(const std::string& factory, const std::string& props, GQuark domain,
                        int code, std::initializer_list<std::string> keys) {
  GstElement* e = gst_parse_launch((factory + " " + props).c_str(), nullptr);
  ASSERT_NE(e, nullptr) << props;
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << props;
  ASSERT_TRUE(r.error.set) << props;
  EXPECT_EQ(r.error.domain, domain) << r.error.message;
  EXPECT_EQ(r.error.code, code) << r.error.message;
  for (const auto& k : keys)
    EXPECT_NE(r.error.message.find(k), std::string::npos) << k << " not in: " << r.error.message;
  EXPECT_TRUE(g_utf8_validate(r.error.message.c_str(), -1, nullptr)) << r.error.message;
  gst_object_unref(e);
}

const char* const kCaps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";

}  // namespace

TEST(HostileInputs, DeepSidecarFailsTheStart) {
  const std::string cfg = write_temp("deep.json", deep_json());
  expect_start_error("torchinfer", "model=" + model("tiny_classifier.pt") + " model-config=" + cfg,
                     GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                     {cfg, "nested deeper than 64 levels"});
}

TEST(HostileInputs, DeepSidecarBesideTheModelFailsTheStart) {
  const std::string m = model_with_sidecar("deep_beside", deep_json());
  expect_start_error("torchinfer", "model=" + m, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                     {temp_path("deep_beside.json"), "nested deeper than 64 levels"});
}

TEST(HostileInputs, DeepSidecarInTorchNmsFailsTheStart) {
  const std::string cfg = write_temp("nms_deep.json", deep_json());
  expect_start_error("torchnms", "model-config=" + cfg, GST_RESOURCE_ERROR,
                     GST_RESOURCE_ERROR_SETTINGS, {cfg, "nested deeper than 64 levels"});
}

TEST(HostileInputs, DeepSidecarAtHotReloadKeepsThePreviousModel) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"), kCaps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  const GstVideoInfo info = info_of(kCaps);
  gst_buffer_unref(gst_harness_push_and_pull(h, make_video_buffer(info, 1)));
  const std::string m = model_with_sidecar("deep_reload", deep_json());
  g_object_set(h->element, "model", m.c_str(), nullptr);
  GstMessage* msg = wait_element_message(bus, "warning");
  ASSERT_NE(msg, nullptr);
  GError* err = nullptr;
  gchar* debug = nullptr;
  gst_message_parse_warning(msg, &err, &debug);
  EXPECT_NE(std::string(err->message).find("still running the previous model"), std::string::npos)
      << err->message;
  EXPECT_NE(std::string(debug ? debug : "").find("nested deeper than 64 levels"), std::string::npos)
      << (debug ? debug : "");
  g_error_free(err);
  g_free(debug);
  gst_message_unref(msg);
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info, 2));
  EXPECT_NE(out, nullptr);
  if (out) gst_buffer_unref(out);
  gst_element_set_bus(h->element, nullptr);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

TEST(HostileInputs, FifoModelFailsAtOnce) {
  const std::string fifo = make_fifo("model.pt");
  expect_start_error("torchinfer", "model=" + fifo, GST_RESOURCE_ERROR,
                     GST_RESOURCE_ERROR_NOT_FOUND, {fifo, "not a regular file"});
}

TEST(HostileInputs, FifoSidecarAndLabelsFailAtOnce) {
  const std::string cfg = make_fifo("cfg.json");
  expect_start_error("torchinfer", "model=" + model("tiny_classifier.pt") + " model-config=" + cfg,
                     GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, {cfg, "not a regular file"});
  const std::string labels = make_fifo("x.labels");
  expect_start_error("torchinfer", "model=" + model("tiny_classifier.pt") + " labels=" + labels,
                     GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
                     {labels, "not a regular file"});
  expect_start_error("torchnms", "labels=" + labels, GST_RESOURCE_ERROR,
                     GST_RESOURCE_ERROR_NOT_FOUND, {labels, "not a regular file"});
}

TEST(HostileInputs, LabelsNotUtf8NameFileAndLine) {
  const std::string labels = write_temp("latin1.labels", "a\nb\nsch\xe4\x64\x65n\n");
  expect_start_error("torchinfer", "model=" + model("tiny_classifier.pt") + " labels=" + labels,
                     GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                     {labels, "line 3 is not valid UTF-8", "save the file as UTF-8"});
  expect_start_error("torchnms", "labels=" + labels, GST_RESOURCE_ERROR,
                     GST_RESOURCE_ERROR_SETTINGS, {labels, "line 3 is not valid UTF-8"});
}

TEST(HostileInputs, TorchSaveFileSaysHowToExport) {
  for (const char* name : {"state_dict.pt", "pickled_module.pt"})
    expect_start_error("torchinfer", "model=" + model(name), GST_LIBRARY_ERROR,
                       GST_LIBRARY_ERROR_INIT,
                       {model(name), "torch.save()", "not TorchScript", "models/export.py"});
}

TEST(HostileInputs, MetaConvertOnAFullDiskIsAWriteError) {
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer model=" + model("tiny_classifier.pt") + " ! torchmetaconvert location=/dev/full")
          .c_str());
  gst_harness_set_src_caps_str(h, kCaps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  const GstVideoInfo info = info_of(kCaps);
  gst_harness_push(h, make_video_buffer(info, 3));
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND, GST_MESSAGE_ERROR);
  ASSERT_NE(msg, nullptr);
  GError* err = nullptr;
  gst_message_parse_error(msg, &err, nullptr);
  EXPECT_EQ(err->domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(err->code, GST_RESOURCE_ERROR_WRITE);
  EXPECT_NE(std::string(err->message)
                .find("Could not write results to '/dev/full': No space left "
                      "on device"),
            std::string::npos)
      << err->message;
  g_error_free(err);
  gst_message_unref(msg);
  gst_element_set_bus(h->element, nullptr);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}
