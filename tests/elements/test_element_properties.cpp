// The properties of torchnms, torchtrack, torchoverlay, torchmetaconvert,
// torchanalytics and torchcodes as a user sees them, checked the same way as torchinfer's and
// torchpublish's (property_checks.h): the fixed list of names, types and
// access, defaults, round trips, and the one rule for changes while running.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "property_checks.h"

using namespace torchinfer::test;

namespace {

// 'r': writable in NULL/READY only; 'p': writable while PLAYING; 'o': read-only.
struct ElementProperties {
  const char* factory;
  std::vector<ExpectedProperty> expected;
  std::map<std::string, std::string> strings;  // a valid value per string property
  int ready_only, playing;
};

// torchanalytics reads its config file when it is set while running: a
// real one, written before the tests run.
const std::string kAnalyticsConfig =
    std::string(g_get_tmp_dir()) + "/torchinfer-props-analytics.json";

const ElementProperties kElements[] = {
    {"torchnms",
     {{"decoder", "GstTorchNmsDecoder", 'r'},
      {"confidence-threshold", "gdouble", 'r'},
      {"iou-threshold", "gdouble", 'r'},
      {"max-detections", "guint", 'r'},
      {"class-agnostic", "gboolean", 'r'},
      {"labels", "gchararray", 'r'},
      {"model-config", "gchararray", 'r'},
      {"detections", "guint64", 'o'},
      {"stats-interval", "guint", 'p'},
      {"stats", "GstStructure", 'o'},
      {"suppress-contained", "gdouble", 'r'},
      {"mask-threshold", "gdouble", 'r'},
      {"model-instance-id", "gchararray", 'r'}},
     {{"labels", "/models/labels.txt"},
      {"model-config", "/models/det.json"},
      {"model-instance-id", "qa-seg"}},
     10,
     1},
    {"torchtrack",
     {{"tracking-type", "GstTorchTrackTrackingType", 'r'},
      {"max-age", "guint", 'r'},
      {"min-hits", "guint", 'r'},
      {"iou-threshold", "gdouble", 'r'}},
     {},
     4,
     0},
    {"torchoverlay",
     {{"show-labels", "gboolean", 'p'},
      {"show-confidence", "gboolean", 'p'},
      {"show-classification", "gboolean", 'p'},
      {"show-hud", "gboolean", 'p'},
      {"show-anomaly-map", "gboolean", 'p'},
      {"anomaly-map-alpha", "gdouble", 'p'},
      {"anomaly-map-normal", "gboolean", 'p'}},
     {},
     0,
     7},
    {"torchmetaconvert",
     {{"location", "gchararray", 'r'},
      {"include-tensors", "gboolean", 'p'},
      {"max-tensor-elements", "guint", 'p'},
      {"lines", "guint64", 'o'},
      {"anomaly-regions", "gboolean", 'p'},
      {"mm-per-pixel", "gdouble", 'p'}},
     {{"location", "/tmp/results.jsonl"}},
     1,
     4},
    {"torchanalytics",
     {{"lines", "gchararray", 'p'},
      {"zones", "gchararray", 'p'},
      {"normalized", "gboolean", 'p'},
      {"config", "gchararray", 'p'},
      {"reference-point", "GstTorchAnalyticsReferencePoint", 'p'},
      {"hysteresis", "gdouble", 'p'},
      {"max-age", "guint", 'p'},
      {"classes", "gchararray", 'p'},
      {"counts", "GstStructure", 'o'}},
     {{"lines", "gate:320,0,320,480"},
      {"zones", "bin:0,0,100,0,100,100"},
      {"config", kAnalyticsConfig},
      {"classes", "bracket,washer"}},
     0,
     8},
    {"torchcodes",
     {{"formats", "gchararray", 'r'},
      {"object-class", "gchararray", 'r'},
      {"padding", "gdouble", 'r'},
      {"reread-interval", "guint", 'r'},
      {"try-harder", "gboolean", 'r'},
      {"try-rotate", "gboolean", 'r'},
      {"try-invert", "gboolean", 'r'},
      {"full-frame", "GstTorchCodesFullFrame", 'r'},
      {"read", "guint64", 'o'},
      {"failed", "guint64", 'o'},
      {"tried", "guint64", 'o'},
      {"skipped-known", "guint64", 'o'},
      {"workers", "guint", 'r'},
      {"budget-ms", "gdouble", 'r'},
      {"late", "guint64", 'o'},
      {"deferred", "guint64", 'o'}},
     {{"formats", "QRCode,DataMatrix"}, {"object-class", "part,label"}},
     10,
     0},
};

void PrintTo(const ElementProperties& p, std::ostream* os) {
  *os << p.factory;
}

class ElementPropertiesTest : public ::testing::TestWithParam<ElementProperties> {
 protected:
  static void SetUpTestSuite() {
    std::ofstream(kAnalyticsConfig)
        << R"({"lines": [{"name": "door", "points": [[0, 0], [10, 10]]}]})";
  }

  GstElement* make() { return gst_element_factory_make(GetParam().factory, nullptr); }

  // The element started (PLAYING), on its own: every property is in use.
  GstHarness* running() {
    GstHarness* h = gst_harness_new(GetParam().factory);
    if (GST_STATE(h->element) != GST_STATE_PLAYING) gst_harness_play(h);
    return h;
  }
};

std::string name_of(const ::testing::TestParamInfo<ElementProperties>& info) {
  return info.param.factory;
}

INSTANTIATE_TEST_SUITE_P(Elements, ElementPropertiesTest, ::testing::ValuesIn(kElements), name_of);

}  // namespace

TEST_P(ElementPropertiesTest, NamesTypesAndAccessAreTheFixedList) {
  GstElement* e = make();
  ASSERT_NE(e, nullptr);
  expect_property_list(e, GetParam().expected.data(), GetParam().expected.size());
  gst_object_unref(e);
}

TEST_P(ElementPropertiesTest, FreshElementReadsTheParamSpecDefaults) {
  GstElement* e = make();
  int boxed = 0;
  for (const ExpectedProperty& p : GetParam().expected)
    boxed += std::string(p.type) == "GstStructure";
  EXPECT_EQ(expect_defaults(e), static_cast<int>(GetParam().expected.size()) - boxed);
  gst_object_unref(e);
}

TEST_P(ElementPropertiesTest, EveryWritablePropertyRoundTrips) {
  GstElement* e = make();
  WarningCatcher w;
  EXPECT_EQ(round_trip_writable(e, GetParam().strings), GetParam().ready_only + GetParam().playing);
  EXPECT_TRUE(w.messages().empty()) << w.messages().front();
  gst_object_unref(e);
}

TEST_P(ElementPropertiesTest, PlayingPropertiesChangeWhileRunning) {
  GstHarness* h = running();
  EXPECT_EQ(expect_playing_accepted(h->element, GetParam().strings), GetParam().playing);
  gst_harness_teardown(h);
}

// ---- negative -------------------------------------------------------------

TEST_P(ElementPropertiesTest, ReadyOnlyPropertiesRefusedWhileRunning) {
  GstHarness* h = running();
  EXPECT_EQ(expect_ready_only_refused(h->element, GetParam().strings), GetParam().ready_only);
  gst_harness_teardown(h);
}

TEST_P(ElementPropertiesTest, UnknownPropertyIdWarns) {
  GstElement* e = make();
  const std::string who = std::string(GetParam().factory) + ": ";
  EXPECT_EQ(unknown_id_warnings(e, true, true),
            (std::vector<std::string>{who + "no writable property with id 999 ('no-such-property')",
                                      who + "no property with id 999 ('no-such-property')"}));
  gst_object_unref(e);
}
