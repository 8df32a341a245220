// torchinfer's engine settings: threads, cores, precision, load timings.
#include <dirent.h>
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "common/cpu_set.h"
#include "element_helpers.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

const char* kCaps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";

// tid -> Cpus_allowed_list of every thread in this process.
std::map<std::string, std::string> thread_affinities() {
  std::map<std::string, std::string> out;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Cpus_allowed_list:", 0) == 0)
        out[e->d_name] = line.substr(line.find_last_of(" \t") + 1);
  }
  if (d) closedir(d);
  return out;
}

GstElement* make(const std::string& props) {
  return gst_parse_launch(("torchinfer model=" + model("tiny_classifier.pt") + " " + props).c_str(),
                          nullptr);
}

void expect_settings_error(GstElement* e, const std::string& needle) {
  ASSERT_NE(e, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR) << r.error.message;
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS) << r.error.message;
  EXPECT_NE(r.error.message.find(needle), std::string::npos) << r.error.message;
  EXPECT_EQ(r.error.message.find('\n'), std::string::npos) << r.error.message;
  gst_object_unref(e);
}

}  // namespace

TEST(TorchInferEngine, PinnedThreadsRunOnListedCores) {
  const auto allowed = allowed_cpus();
  std::vector<std::string> lists{std::to_string(allowed[0])};
  if (allowed.size() >= 2 && allowed[0] == 0 && allowed[1] == 1) lists = {"0", "1", "0-1"};
  for (const std::string& list : lists) {
    const auto before = thread_affinities();
    GstHarness* h =
        torchinfer_harness("model=" + model("tiny_classifier.pt") + " cores=" + list, kCaps);
    const GstVideoInfo info = info_of(kCaps);
    gst_buffer_unref(gst_harness_push_and_pull(h, make_video_buffer(info, 1)));
    // Threads born during this run (threads of earlier engines may still be
    // exiting, so compare thread ids, not counts).
    std::map<std::string, int> pinned_new;
    for (const auto& [tid, cpus] : thread_affinities())
      if (!before.count(tid)) pinned_new[cpus]++;
    for (int core : parse_cpu_list(list)) {
      const std::string c = std::to_string(core);
      EXPECT_GE(pinned_new[c], 1) << "cores=" << list << ": no new thread pinned to CPU " << c;
    }
    // (New unpinned threads are the harness's own streaming threads.)
    gint threads = 0;
    gchar* precision = nullptr;
    g_object_get(h->element, "threads", &threads, "active-precision", &precision, nullptr);
    EXPECT_EQ(threads, 0);  // the property keeps what the user set
    EXPECT_STREQ(precision, "fp32");
    g_free(precision);
    gst_harness_teardown(h);
  }
}

TEST(TorchInferEngine, LoadTimingsArePublished) {
  GstHarness* h =
      torchinfer_harness("model=" + model("tiny_classifier.pt") + " threads=1 warmup=2", kCaps);
  gst_harness_play(h);
  gdouble load = 0, read = 0, opt = 0, warm = 0;
  g_object_get(h->element, "load-time", &load, "read-time", &read, "optimize-time", &opt,
               "warmup-time", &warm, nullptr);
  EXPECT_GT(read, 0);
  EXPECT_GT(opt, 0);
  EXPECT_GT(warm, 0);
  EXPECT_NEAR(load, read + opt + warm, 1e-6);
  gst_harness_teardown(h);
}

TEST(TorchInferEngine, PrecisionIsARegisteredEnum) {
  GstElement* e = make("precision=fp32 threads=2 cores=0");
  ASSERT_NE(e, nullptr);
  GParamSpec* p = g_object_class_find_property(G_OBJECT_GET_CLASS(e), "precision");
  ASSERT_TRUE(G_IS_PARAM_SPEC_ENUM(p));
  GEnumClass* k = G_ENUM_CLASS(g_type_class_ref(p->value_type));
  for (const char* nick : {"auto", "fp32", "int8", "bf16"})
    EXPECT_NE(g_enum_get_value_by_nick(k, nick), nullptr) << nick;
  g_type_class_unref(k);
  gchar* cores = nullptr;
  gint threads = 0;
  g_object_get(e, "cores", &cores, "threads", &threads, nullptr);
  EXPECT_STREQ(cores, "0");
  EXPECT_EQ(threads, 2);
  g_free(cores);
  gst_object_unref(e);
}

// ---- negative ---------------------------------------------------------------

TEST(TorchInferEngineErrors, BadCoreListsFailTheStateChange) {
  for (const char* bad : {"a-b", "3-1", "99", "0,,1", "1x"})
    expect_settings_error(make(std::string("cores=") + bad), "cores '" + std::string(bad) + "'");
}

TEST(TorchInferEngineErrors, EmptyCoreListIsAnError) {
  GstElement* e = make("");
  g_object_set(e, "cores", "", nullptr);
  expect_settings_error(e, "empty");
}

TEST(TorchInferEngineErrors, CoreOutsideProcessAffinity) {
  const auto allowed = allowed_cpus();
  expect_settings_error(make("cores=" + std::to_string(allowed.back() + 1)),
                        "allowed: " + format_cpu_list(allowed));
}

TEST(TorchInferEngineErrors, Int8OnAFloatModel) {
  expect_settings_error(make("precision=int8"), "quantize.py");
}

TEST(TorchInferEngineErrors, UnknownPrecisionNickRejected) {
  GError* err = nullptr;
  GstElement* e = gst_parse_launch(
      ("torchinfer model=" + model("tiny_classifier.pt") + " precision=fp16").c_str(), &err);
  EXPECT_TRUE(err != nullptr || e == nullptr);
  g_clear_error(&err);
  if (e) gst_object_unref(e);
}

TEST(TorchInferEngineErrors, OversubscribedThreadsWarn) {
  GstElement* e = make("threads=" + std::to_string(allowed_cpus().size() + 2));
  const StartResult r = try_start(e);
  gst_object_unref(e);
  EXPECT_NE(r.ret, GST_STATE_CHANGE_FAILURE);
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("threads=") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(TorchInferEngine, Int8ModelRunsThroughTheElement) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_int8.pt"), kCaps);
  const GstVideoInfo info = info_of(kCaps);
  gst_buffer_unref(gst_harness_push_and_pull(h, make_video_buffer(info, 2)));
  gchar* precision = nullptr;
  g_object_get(h->element, "active-precision", &precision, nullptr);
  EXPECT_STREQ(precision, "int8");
  g_free(precision);
  gst_harness_teardown(h);
}

TEST(TorchInferEngineErrors, ForcedInt8ModelWarnsLoudly) {
  const std::string dir = testing::TempDir();
  {
    std::ifstream in(model("tiny_int8.pt"), std::ios::binary);
    std::ofstream(dir + "forced_int8.pt", std::ios::binary) << in.rdbuf();
  }
  std::ofstream(dir + "forced_int8.json")
      << R"({"input_width": 48, "input_height": 32, "task": "raw", "precision": "int8",
             "quantization": {"forced": true}})";
  GstElement* e = gst_parse_launch(("torchinfer model=" + dir + "forced_int8.pt").c_str(), nullptr);
  const StartResult r = try_start(e);
  gst_object_unref(e);
  EXPECT_NE(r.ret, GST_STATE_CHANGE_FAILURE);
  bool warned = false;
  for (const auto& w : r.warnings)
    warned |= w.find("FAILED its accuracy check") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(TorchInferEngineErrors, Fp32RequestedForInt8Model) {
  GstElement* e = gst_parse_launch(
      ("torchinfer precision=fp32 model=" + model("tiny_int8.pt")).c_str(), nullptr);
  expect_settings_error(e, "int8-quantized");
}
