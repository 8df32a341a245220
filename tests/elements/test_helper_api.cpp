// The installed helper API (plugin/gst/torchinfer/torchinfer-helpers.h):
// the ROI and detection visitors, the structure-array visitor, the object
// id and the anomaly map rule, on buffers built here (no element, no model).
#include <gst/gst.h>
#include <gst/torchinfer/torchinfer-helpers.h>
#include <gst/torchinfer/torchinfer-meta.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// Criticals of the default log domain (g_return_if_fail) while alive.
class CriticalCatcher {
 public:
  CriticalCatcher()
      : id_(g_log_set_handler(nullptr, G_LOG_LEVEL_CRITICAL, &CriticalCatcher::handler, this)) {}
  ~CriticalCatcher() { g_log_remove_handler(nullptr, id_); }
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  static void handler(const gchar*, GLogLevelFlags, const gchar* message, gpointer self) {
    static_cast<CriticalCatcher*>(self)->messages_.push_back(message);
  }
  guint id_;
  std::vector<std::string> messages_;
};

struct BufferPtr {
  GstBuffer* b;
  ~BufferPtr() { gst_buffer_unref(b); }
};

// Three detections and two ROIs of another element, interleaved, on a
// 200x100 frame: bolt (det), person (plain), nut (det), car (incomplete
// "detection" param: no confidence), washer (det).
GstBuffer* mixed_buffer() {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, 16, nullptr);
  gst_buffer_add_torch_detection(b, "bolt", 0, 0.9, 10, 20, 50, 60, 200, 100);
  gst_buffer_add_video_region_of_interest_meta(b, "person", 1, 2, 3, 4);
  gst_buffer_add_torch_detection(b, "nut", 1, 0.75, 100, 0, 200, 100, 200, 100);
  GstVideoRegionOfInterestMeta* car =
      gst_buffer_add_video_region_of_interest_meta(b, "car", 5, 6, 7, 8);
  gst_video_region_of_interest_meta_add_param(
      car, gst_structure_new("detection", "label", G_TYPE_STRING, "car", "label_id", G_TYPE_INT, 3,
                             nullptr));
  gst_buffer_add_torch_detection(b, "washer", 2, 0.5, 0, 50, 20, 100, 200, 100);
  return b;
}

gboolean collect_roi(GstVideoRegionOfInterestMeta* roi, gpointer user) {
  static_cast<std::vector<std::string>*>(user)->push_back(g_quark_to_string(roi->roi_type));
  return TRUE;
}

struct Seen {
  std::string label;
  gint label_id;
  gdouble confidence, x_min, y_min, x_max, y_max;
  guint px, py, pw, ph;
};

gboolean collect_detection(GstVideoRegionOfInterestMeta* roi, const GstTorchDetection* d,
                           gpointer user) {
  static_cast<std::vector<Seen>*>(user)->push_back({d->label, d->label_id, d->confidence, d->x_min,
                                                    d->y_min, d->x_max, d->y_max, roi->x, roi->y,
                                                    roi->w, roi->h});
  return TRUE;
}

gboolean stop_at_first(GstVideoRegionOfInterestMeta*, gpointer user) {
  ++*static_cast<int*>(user);
  return FALSE;
}

gboolean never_called_roi(GstVideoRegionOfInterestMeta*, gpointer) {
  ADD_FAILURE() << "called on a buffer without ROIs";
  return TRUE;
}

gboolean never_called_detection(GstVideoRegionOfInterestMeta*, const GstTorchDetection*, gpointer) {
  ADD_FAILURE() << "called on a buffer without detections";
  return TRUE;
}

}  // namespace

TEST(HelperApi, ForeachRoiVisitsEveryRoiInAttachOrder) {
  BufferPtr b{mixed_buffer()};
  std::vector<std::string> types;
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, collect_roi, &types), 5u);
  EXPECT_EQ(types, (std::vector<std::string>{"bolt", "person", "nut", "car", "washer"}));
}

TEST(HelperApi, ForeachDetectionGivesTheExactDetectionsInOrder) {
  BufferPtr b{mixed_buffer()};
  std::vector<Seen> seen;
  EXPECT_EQ(gst_torch_buffer_foreach_detection(b.b, collect_detection, &seen), 3u);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].label, "bolt");
  EXPECT_EQ(seen[0].label_id, 0);
  EXPECT_DOUBLE_EQ(seen[0].confidence, 0.9);
  EXPECT_DOUBLE_EQ(seen[0].x_min, 0.05);
  EXPECT_DOUBLE_EQ(seen[0].y_min, 0.2);
  EXPECT_DOUBLE_EQ(seen[0].x_max, 0.25);
  EXPECT_DOUBLE_EQ(seen[0].y_max, 0.6);
  EXPECT_EQ(seen[0].px, 10u);
  EXPECT_EQ(seen[0].py, 20u);
  EXPECT_EQ(seen[0].pw, 40u);
  EXPECT_EQ(seen[0].ph, 40u);
  EXPECT_EQ(seen[1].label, "nut");
  EXPECT_EQ(seen[1].label_id, 1);
  EXPECT_DOUBLE_EQ(seen[1].confidence, 0.75);
  EXPECT_DOUBLE_EQ(seen[1].x_min, 0.5);
  EXPECT_DOUBLE_EQ(seen[1].y_max, 1.0);
  EXPECT_EQ(seen[1].pw, 100u);
  EXPECT_EQ(seen[2].label, "washer");
  EXPECT_EQ(seen[2].label_id, 2);
  EXPECT_DOUBLE_EQ(seen[2].confidence, 0.5);
  EXPECT_DOUBLE_EQ(seen[2].y_min, 0.5);
  EXPECT_DOUBLE_EQ(seen[2].x_max, 0.1);
}

TEST(HelperApi, FalseFromTheCallbackStopsAndCountsThatOne) {
  BufferPtr b{mixed_buffer()};
  int calls = 0;
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, stop_at_first, &calls), 1u);
  EXPECT_EQ(calls, 1);
  std::vector<std::string> labels;
  EXPECT_EQ(
      gst_torch::foreach_detection(b.b,
                                   [&](GstVideoRegionOfInterestMeta*, const GstTorchDetection& d) {
                                     labels.push_back(d.label);
                                     return labels.size() < 2;
                                   }),
      2u);
  EXPECT_EQ(labels, (std::vector<std::string>{"bolt", "nut"}));
}

TEST(HelperApi, NullCallbackOnlyCounts) {
  BufferPtr b{mixed_buffer()};
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, nullptr, nullptr), 5u);
  EXPECT_EQ(gst_torch_buffer_foreach_detection(b.b, nullptr, nullptr), 3u);
}

TEST(HelperApi, EmptyBufferHasNothingToVisit) {
  BufferPtr b{gst_buffer_new()};
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, never_called_roi, nullptr), 0u);
  EXPECT_EQ(gst_torch_buffer_foreach_detection(b.b, never_called_detection, nullptr), 0u);
}

TEST(HelperApi, BufferWithOtherMetasButNoRoi) {
  BufferPtr b{gst_buffer_new_allocate(nullptr, 16, nullptr)};
  GBytes* owner = g_bytes_new(nullptr, 0);
  gst_buffer_add_torch_tensor_meta(b.b, 0, owner);
  g_bytes_unref(owner);
  gst_buffer_add_video_meta(b.b, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, 4, 4);
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, never_called_roi, nullptr), 0u);
  EXPECT_EQ(gst_torch_buffer_foreach_detection(b.b, never_called_detection, nullptr), 0u);
}

TEST(HelperApi, OnlyRoisOfOtherElementsHaveNoDetections) {
  BufferPtr b{gst_buffer_new_allocate(nullptr, 16, nullptr)};
  gst_buffer_add_video_region_of_interest_meta(b.b, "person", 0, 0, 2, 2);
  EXPECT_EQ(gst_torch_buffer_foreach_roi(b.b, nullptr, nullptr), 1u);
  EXPECT_EQ(gst_torch_buffer_foreach_detection(b.b, never_called_detection, nullptr), 0u);
}

TEST(HelperApi, NullBufferIsACriticalAndZero) {
  CriticalCatcher criticals;
  EXPECT_EQ(gst_torch_buffer_foreach_roi(nullptr, collect_roi, nullptr), 0u);
  EXPECT_EQ(gst_torch_buffer_foreach_detection(nullptr, collect_detection, nullptr), 0u);
  ASSERT_EQ(criticals.messages().size(), 2u);
  EXPECT_NE(criticals.messages()[0].find("GST_IS_BUFFER"), std::string::npos);
}

TEST(HelperApi, CxxVisitorTakesACapturingLambda) {
  BufferPtr b{mixed_buffer()};
  std::vector<gint> ids;
  EXPECT_EQ(gst_torch::foreach_roi(
                b.b, [&](GstVideoRegionOfInterestMeta* roi) { ids.push_back(roi->id); }),
            5u);
  // torchinfer's detections count ids over every ROI attached before them.
  EXPECT_EQ(ids, (std::vector<gint>{0, 0, 2, 0, 4}));
}

namespace {

GstStructure* counts_structure() {
  GValue lines = G_VALUE_INIT;
  gst_value_array_init(&lines, 2);
  for (const char* name : {"gate", "exit"}) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, GST_TYPE_STRUCTURE);
    GstStructure* line = gst_structure_new("line", "name", G_TYPE_STRING, name, nullptr);
    gst_value_set_structure(&v, line);
    gst_structure_free(line);
    gst_value_array_append_and_take_value(&lines, &v);
  }
  // An array of numbers, as a zone's "points".
  GValue points = G_VALUE_INIT;
  gst_value_array_init(&points, 2);
  for (double x : {1.5, 2.5}) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_DOUBLE);
    g_value_set_double(&v, x);
    gst_value_array_append_and_take_value(&points, &v);
  }
  GstStructure* s = gst_structure_new("torchanalytics", "count", G_TYPE_INT, 3, nullptr);
  gst_structure_take_value(s, "lines", &lines);
  gst_structure_take_value(s, "points", &points);
  return s;
}

gboolean collect_name(const GstStructure* s, gpointer user) {
  static_cast<std::vector<std::string>*>(user)->push_back(gst_structure_get_string(s, "name"));
  return TRUE;
}

}  // namespace

TEST(HelperApi, ForeachStructureVisitsTheArraysStructuresInOrder) {
  GstStructure* s = counts_structure();
  std::vector<std::string> names;
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, "lines", collect_name, &names), 2u);
  EXPECT_EQ(names, (std::vector<std::string>{"gate", "exit"}));
  EXPECT_EQ(gst_torch::foreach_structure(s, "lines", [](const GstStructure*) { return false; }),
            1u);
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, "lines", nullptr, nullptr), 2u);
  gst_structure_free(s);
}

TEST(HelperApi, ForeachStructureOnAMissingOrScalarFieldIsZero) {
  GstStructure* s = counts_structure();
  std::vector<std::string> names;
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, "zones", collect_name, &names), 0u);
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, "count", collect_name, &names), 0u);
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, "points", collect_name, &names), 0u);
  EXPECT_TRUE(names.empty());
  CriticalCatcher criticals;
  EXPECT_EQ(gst_torch_structure_foreach_structure(nullptr, "lines", collect_name, &names), 0u);
  EXPECT_EQ(gst_torch_structure_foreach_structure(s, nullptr, collect_name, &names), 0u);
  EXPECT_EQ(criticals.messages().size(), 2u);
  gst_structure_free(s);
}

TEST(HelperApi, ObjectIdOfATrackedRoi) {
  BufferPtr b{gst_buffer_new_allocate(nullptr, 16, nullptr)};
  GstVideoRegionOfInterestMeta* tracked =
      gst_buffer_add_video_region_of_interest_meta(b.b, "a", 0, 0, 1, 1);
  gst_video_region_of_interest_meta_add_param(
      tracked, gst_structure_new(GST_TORCH_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, 7,
                                 "predicted", G_TYPE_BOOLEAN, TRUE, nullptr));
  GstVideoRegionOfInterestMeta* seen =
      gst_buffer_add_video_region_of_interest_meta(b.b, "b", 0, 0, 1, 1);
  gst_video_region_of_interest_meta_add_param(
      seen, gst_structure_new(GST_TORCH_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, 3, nullptr));
  GstVideoRegionOfInterestMeta* no_id =
      gst_buffer_add_video_region_of_interest_meta(b.b, "c", 0, 0, 1, 1);
  gst_video_region_of_interest_meta_add_param(
      no_id, gst_structure_new(GST_TORCH_OBJECT_ID_STRUCTURE_NAME, "predicted", G_TYPE_BOOLEAN,
                               TRUE, nullptr));
  GstVideoRegionOfInterestMeta* untracked =
      gst_buffer_add_video_region_of_interest_meta(b.b, "d", 0, 0, 1, 1);

  gint id = -1;
  gboolean predicted = FALSE;
  EXPECT_TRUE(gst_torch_roi_get_object_id(tracked, &id, &predicted));
  EXPECT_EQ(id, 7);
  EXPECT_TRUE(predicted);
  EXPECT_TRUE(gst_torch_roi_get_object_id(seen, &id, &predicted));
  EXPECT_EQ(id, 3);
  EXPECT_FALSE(predicted);
  EXPECT_TRUE(gst_torch_roi_get_object_id(tracked, &id, nullptr));
  id = -1;
  predicted = TRUE;
  EXPECT_FALSE(gst_torch_roi_get_object_id(no_id, &id, &predicted));
  EXPECT_FALSE(gst_torch_roi_get_object_id(untracked, &id, &predicted));
  EXPECT_EQ(id, -1);  // nothing written
  EXPECT_TRUE(predicted);
  CriticalCatcher criticals;
  EXPECT_FALSE(gst_torch_roi_get_object_id(nullptr, &id, nullptr));
  EXPECT_FALSE(gst_torch_roi_get_object_id(tracked, nullptr, nullptr));
  EXPECT_EQ(criticals.messages().size(), 2u);
}

TEST(HelperApi, AnomalyMapRuleNormalised) {
  GstStructure* s = gst_structure_new(
      "anomaly", "map_threshold", G_TYPE_DOUBLE, 0.6, "map_norm_threshold", G_TYPE_DOUBLE, 12.5,
      "map_norm_min", G_TYPE_DOUBLE, 1.0, "map_norm_max", G_TYPE_DOUBLE, 30.0, nullptr);
  GstTorchAnomalyMapRule r;
  EXPECT_TRUE(gst_torch_anomaly_get_map_rule(s, &r));
  EXPECT_DOUBLE_EQ(r.threshold, 0.6);
  EXPECT_TRUE(r.normalized);
  EXPECT_DOUBLE_EQ(r.norm_threshold, 12.5);
  EXPECT_DOUBLE_EQ(r.norm_min, 1.0);
  EXPECT_DOUBLE_EQ(r.norm_max, 30.0);
  gst_structure_free(s);
}

TEST(HelperApi, AnomalyMapRuleDefaultsAndPartialNormalisation) {
  // No map_threshold: anomalib's 0.5; two of three norm fields: raw units.
  GstStructure* s = gst_structure_new("anomaly", "map_norm_threshold", G_TYPE_DOUBLE, 12.5,
                                      "map_norm_min", G_TYPE_DOUBLE, 1.0, nullptr);
  GstTorchAnomalyMapRule r;
  r.threshold = 9;
  r.normalized = TRUE;
  EXPECT_FALSE(gst_torch_anomaly_get_map_rule(s, &r));
  EXPECT_DOUBLE_EQ(r.threshold, 0.5);
  EXPECT_FALSE(r.normalized);
  EXPECT_DOUBLE_EQ(r.norm_threshold, 0.0);
  gst_structure_free(s);
  CriticalCatcher criticals;
  EXPECT_FALSE(gst_torch_anomaly_get_map_rule(nullptr, &r));
  EXPECT_EQ(criticals.messages().size(), 1u);
}
