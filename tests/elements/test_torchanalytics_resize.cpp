// torchanalytics: the `classes` filter of the lines and zones properties
// (the detector's defect boxes are not parts), and normalised lines that
// keep their counts and the tracks' sides across a frame-size change.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"

namespace {

struct Obj {
  int id;
  double x;  // box centre, frame pixels (the box is 40 px wide)
  const char* label = "part";
};

struct Harness {
  GstHarness* h = nullptr;
  int w = 640, hgt = 480, n = 0;

  explicit Harness(const std::string& props) {
    GstElement* e = gst_parse_launch(("torchanalytics " + props).c_str(), nullptr);
    EXPECT_NE(e, nullptr);
    h = gst_harness_new_with_element(e, "sink", "src");
    gst_object_unref(e);
    size(640, 480);
  }
  ~Harness() { gst_harness_teardown(h); }
  void size(int width, int height) {
    w = width;
    hgt = height;
    gst_harness_set_src_caps_str(h, ("video/x-raw,format=GRAY8,width=" + std::to_string(w) +
                                     ",height=" + std::to_string(hgt) + ",framerate=30/1")
                                        .c_str());
  }
  // One frame; the gate line's (or the first line's) forward count after it.
  guint64 push(const std::vector<Obj>& objs, const char* line = "gate") {
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, static_cast<gsize>(w) * hgt, nullptr);
    GST_BUFFER_PTS(buf) = n++ * GST_SECOND / 30;
    for (const Obj& o : objs) {
      GstVideoRegionOfInterestMeta* roi = gst_buffer_add_torch_detection(
          buf, o.label, 0, 0.9, o.x - 20, hgt / 2.0 - 20, o.x + 20, hgt / 2.0 + 20, w, hgt);
      gst_video_region_of_interest_meta_add_param(
          roi,
          gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, o.id,
                            "predicted", G_TYPE_BOOLEAN, FALSE, "age", G_TYPE_INT, n, nullptr));
    }
    GstBuffer* out = gst_harness_push_and_pull(h, buf);
    EXPECT_NE(out, nullptr);
    guint64 forward = 0;
    GstCustomMeta* cm =
        out ? gst_buffer_get_custom_meta(out, GST_TORCH_ANALYTICS_META_NAME) : nullptr;
    const GValue* lines =
        cm ? gst_structure_get_value(gst_custom_meta_get_structure(cm), "lines") : nullptr;
    for (guint i = 0; lines && i < gst_value_array_get_size(lines); ++i) {
      const GstStructure* l = gst_value_get_structure(gst_value_array_get_value(lines, i));
      if (g_strcmp0(gst_structure_get_string(l, "name"), line) == 0)
        gst_structure_get_uint64(l, "forward", &forward);
    }
    if (out) gst_buffer_unref(out);
    return forward;
  }
};

}  // namespace

// The detector boxes parts and their defects; with classes=bracket,washer
// the gate counts the two parts, not the scratch riding on one.
TEST(TorchAnalyticsClasses, TheClassesPropertyFiltersPropertyLines) {
  Harness a("lines=gate:320,480,320,0 classes=bracket,washer");
  guint64 f = 0;
  for (double x : {200.0, 300.0, 340.0, 440.0})
    f = a.push({{1, x, "bracket"}, {2, x, "scratch"}, {3, x, "washer"}});
  EXPECT_EQ(f, 2u);
  gchar* classes = nullptr;
  g_object_get(a.h->element, "classes", &classes, nullptr);
  EXPECT_STREQ(classes, "bracket,washer");
  g_free(classes);
  // Changed while PLAYING: the line's filter changed, so it starts again.
  g_object_set(a.h->element, "classes", "", nullptr);
  for (double x : {200.0, 300.0, 340.0, 440.0}) f = a.push({{4, x, "scratch"}, {5, x, "bracket"}});
  EXPECT_EQ(f, 2u);
}

TEST(TorchAnalyticsClasses, ABadClassListIsRefusedAndThePreviousStays) {
  Harness a("classes=bracket");
  g_object_set(a.h->element, "classes", "bracket,,washer", nullptr);
  gchar* classes = nullptr;
  g_object_get(a.h->element, "classes", &classes, nullptr);
  EXPECT_STREQ(classes, "bracket");
  g_free(classes);
}

// 3 crossings of a normalised gate with two caps changes between them (the
// second part is mid-way when the frame shrinks): 3, not 1.
TEST(TorchAnalyticsNormalized, CountsAndSidesSurviveACapsChange) {
  Harness a("lines=gate:0.5,1,0.5,0 normalized=true");
  guint64 f = 0;
  for (double x : {200.0, 300.0, 340.0, 440.0}) f = a.push({{1, x}});
  EXPECT_EQ(f, 1u);
  a.push({{2, 300}});  // left of the gate (x 0.47)
  a.size(320, 240);
  f = a.push({{2, 170}});  // right of it in the new pixels (x 0.53): the crossing
  EXPECT_EQ(f, 2u);
  a.size(1280, 960);
  for (double x : {400.0, 600.0, 700.0, 900.0}) f = a.push({{3, x}});
  EXPECT_EQ(f, 3u);
}
