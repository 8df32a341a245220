// torchinfer's properties as a user sees them: the fixed list of names,
// types and access, defaults, round trips, and every refusal keeping the
// previous value.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "element_helpers.h"
#include "model/lanes_rule.h"
#include "property_checks.h"

using namespace torchinfer::test;

namespace {

// 'r': writable in NULL/READY only; 'p': writable while PLAYING; 'o': read-only.
const ExpectedProperty kExpected[] = {
    {"model", "gchararray", 'p'},
    {"model-config", "gchararray", 'r'},
    {"labels", "gchararray", 'r'},
    {"input-width", "gint", 'r'},
    {"input-height", "gint", 'r'},
    {"channel-order", "GstTorchInferChannelOrder", 'r'},
    {"mean", "gchararray", 'r'},
    {"std", "gchararray", 'r'},
    {"scale", "gdouble", 'r'},
    {"offset", "gchararray", 'r'},
    {"task", "GstTorchInferTask", 'r'},
    {"output-activation", "GstTorchInferActivation", 'r'},
    {"top-k", "gint", 'r'},
    {"keep-aspect-ratio", "gboolean", 'r'},
    {"pad-value", "gint", 'r'},
    {"resize-method", "GstTorchInferResizeMethod", 'r'},
    {"warmup", "gint", 'r'},
    {"optimize", "gboolean", 'r'},
    {"crop", "gchararray", 'r'},
    {"model-instance-id", "gchararray", 'r'},
    {"frames", "guint64", 'o'},
    {"load-time", "gdouble", 'o'},
    {"last-inference-time", "gdouble", 'o'},
    {"threads", "gint", 'r'},
    {"cores", "gchararray", 'r'},
    {"precision", "GstTorchInferPrecision", 'r'},
    {"input-dtype", "GstTorchInferInputDtype", 'r'},
    {"read-time", "gdouble", 'o'},
    {"optimize-time", "gdouble", 'o'},
    {"warmup-time", "gdouble", 'o'},
    {"active-precision", "gchararray", 'o'},
    {"batch-size", "gint", 'r'},
    {"batch-timeout", "guint64", 'r'},
    {"inference-interval", "gint", 'r'},
    {"drop-policy", "GstTorchInferDropPolicy", 'r'},
    {"stats-interval", "guint", 'r'},
    {"dropped", "guint64", 'o'},
    {"fps", "gdouble", 'o'},
    {"latency-p50", "gdouble", 'o'},
    {"latency-p99", "gdouble", 'o'},
    {"stats", "GstStructure", 'o'},
    {"input-layout", "GstTorchInferInputLayout", 'r'},
    {"inference-region", "GstTorchInferInferenceRegion", 'r'},
    {"object-class", "gchararray", 'r'},
    {"min-object-size", "gint", 'r'},
    {"object-padding", "gdouble", 'r'},
    {"reclassify-interval", "gint", 'r'},
    {"preprocess-on", "GstTorchInferPreprocessOn", 'r'},
    {"lanes", "gint", 'r'},
    {"input-bits", "gint", 'r'},
    {"sensitivity", "gdouble", 'r'},
    {"anomaly-threshold", "gdouble", 'r'},
    {"active-lanes", "gint", 'o'},
    {"inference-gate", "GstTorchInferInferenceGate", 'r'},
    {"motion-threshold", "gdouble", 'r'},
    {"motion-min-area", "gdouble", 'r'},
    {"motion-hold", "gint", 'r'},
    {"motion-keyframe-interval", "gint", 'r'},
    {"tile-width", "gint", 'r'},
    {"tile-height", "gint", 'r'},
    {"tile-overlap", "gdouble", 'r'},
    {"deskew", "gboolean", 'r'},
};

// A valid value, different from the default, for each string property.
const std::map<std::string, std::string> kStringValues = {
    {"model", "/models/net.pt"},
    {"model-config", "/models/net.json"},
    {"labels", "/models/labels.txt"},
    {"mean", "0.5,0.4,0.3"},
    {"std", "0.2,0.3,0.4"},
    {"offset", "-1,-1,-1"},
    {"crop", "2,4,64,48"},
    {"model-instance-id", "cam-7"},
    {"cores", "0-1"},
    {"object-class", "bolt,nut"},
};

GstElement* make() {
  return gst_element_factory_make("torchinfer", nullptr);
}

}  // namespace

TEST(TorchInferProperties, NamesTypesAndAccessAreTheFixedList) {
  GstElement* e = make();
  ASSERT_NE(e, nullptr);
  expect_property_list(e, kExpected, std::size(kExpected));
  gst_object_unref(e);
}

TEST(TorchInferProperties, FreshElementReadsTheParamSpecDefaults) {
  GstElement* e = make();
  EXPECT_EQ(expect_defaults(e), static_cast<int>(std::size(kExpected)) - 1);
  // "stats", the one boxed property: a structure of zero counters
  GstStructure* s = nullptr;
  g_object_get(e, "stats", &s, nullptr);
  ASSERT_NE(s, nullptr);
  guint64 frames_in = 1;
  EXPECT_TRUE(gst_structure_get_uint64(s, "frames-in", &frames_in));
  EXPECT_EQ(frames_in, 0u);
  gst_structure_free(s);
  gst_object_unref(e);
}

TEST(TorchInferProperties, EveryWritablePropertyRoundTrips) {
  GstElement* e = make();
  WarningCatcher w;
  const int written = round_trip_writable(e, kStringValues);
  EXPECT_EQ(written, 49);
  EXPECT_TRUE(w.messages().empty()) << w.messages().front();
  gst_object_unref(e);
}

// ---- negative -------------------------------------------------------------

// What lanes=0 resolved to was nowhere to read (torchinfer-server's GET
// /models showed the setting, 0): active-lanes is the loaded count.
TEST(TorchInferProperties, ActiveLanesIsTheCountTheLoadChose) {
  const int automatic =
      torchinfer::choose_lanes({torchinfer::physical_cores(torchinfer::allowed_cpus()), 0, 0})
          .lanes;
  for (const auto& [setting, expected] : {std::pair{0, automatic}, std::pair{1, 1}}) {
    GstElement* e = make();
    g_object_set(e, "model", model("identity.pt").c_str(), "lanes", setting, nullptr);
    int lanes = -1;
    g_object_get(e, "active-lanes", &lanes, nullptr);
    EXPECT_EQ(lanes, 0) << "nothing loaded yet";
    const StartResult r = try_start(e);
    ASSERT_NE(r.ret, GST_STATE_CHANGE_FAILURE) << r.error.message;
    g_object_get(e, "active-lanes", &lanes, nullptr);
    EXPECT_EQ(lanes, expected) << "lanes=" << setting;
    gst_element_set_state(e, GST_STATE_NULL);
    gst_object_unref(e);
  }
}

TEST(TorchInferPropertiesErrors, ReadyOnlyPropertiesRefusedWhilePlaying) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"),
                                     "video/x-raw,format=RGB,width=640,height=480,framerate=30/1");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(expect_ready_only_refused(h->element, kStringValues), 48);
  gst_harness_teardown(h);
}

TEST(TorchInferPropertiesErrors, InvalidStringsKeepThePreviousValue) {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"mean", "a,b"},       {"mean", "0.1,0.2"}, {"std", "0.2,0,0.2"}, {"std", "x"},
      {"offset", "1;2;3"},   {"crop", "1,2"},     {"crop", "0,0,0,10"}, {"crop", "-1,0,5,5"},
      {"crop", "1,2,3,4,5"}, {"crop", "a,b,c,d"},
  };
  GstElement* e = make();
  for (const auto& [name, value] : bad) {
    GParamSpec* p = g_object_class_find_property(G_OBJECT_GET_CLASS(e), name);
    g_object_set(e, name, kStringValues.at(name).c_str(), nullptr);
    WarningCatcher w;
    g_object_set(e, name, value, nullptr);
    ASSERT_EQ(w.messages().size(), 1u) << name << "=" << value;
    const std::string& m = w.messages()[0];
    EXPECT_NE(m.find(std::string("rejected value '") + value + "' for property '" + name + "'"),
              std::string::npos)
        << m;
    EXPECT_EQ(read(e, p), "\"" + kStringValues.at(name) + "\"") << name << "=" << value;
  }
  gst_object_unref(e);
}

TEST(TorchInferPropertiesErrors, OutOfRangeNumbersKeepThePreviousValue) {
  GstElement* e = make();
  int tried = 0;
  for (GParamSpec* p : own_specs(e)) {
    if (!writable(p)) continue;
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
    if (G_IS_PARAM_SPEC_INT(p) && G_PARAM_SPEC_INT(p)->maximum < G_MAXINT)
      g_value_set_int(&v, G_PARAM_SPEC_INT(p)->maximum + 1);
    else if (G_IS_PARAM_SPEC_UINT64(p) && G_PARAM_SPEC_UINT64(p)->maximum < G_MAXUINT64)
      g_value_set_uint64(&v, G_PARAM_SPEC_UINT64(p)->maximum + 1);
    else if (G_IS_PARAM_SPEC_DOUBLE(p) && G_PARAM_SPEC_DOUBLE(p)->maximum < G_MAXDOUBLE)
      g_value_set_double(&v, G_PARAM_SPEC_DOUBLE(p)->maximum * 2);
    else {
      g_value_unset(&v);
      continue;
    }
    const std::string before = read(e, p);
    WarningCatcher w("GLib-GObject");
    g_object_set_property(G_OBJECT(e), p->name, &v);
    EXPECT_EQ(w.messages().size(), 1u) << p->name;
    EXPECT_EQ(read(e, p), before) << p->name;
    g_value_unset(&v);
    ++tried;
  }
  // input-width/height, scale, top-k, pad-value, warmup, threads, batch-size,
  // batch-timeout, inference-interval, min-object-size, object-padding,
  // reclassify-interval, lanes, input-bits, sensitivity, motion-threshold,
  // motion-min-area, motion-hold, motion-keyframe-interval, tile-width,
  // tile-height, tile-overlap
  EXPECT_EQ(tried, 23);
  gst_object_unref(e);
}

TEST(TorchInferPropertiesErrors, UnknownPropertyIdWarns) {
  GstElement* e = make();
  const std::vector<std::string> m = unknown_id_warnings(e, true, false);
  EXPECT_EQ(m.size(), 1u);
  if (!m.empty()) {
    EXPECT_NE(m[0].find("999"), std::string::npos) << m[0];
    EXPECT_NE(m[0].find("no-such-property"), std::string::npos) << m[0];
  }
  gst_object_unref(e);
}
