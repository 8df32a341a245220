#include "gst/torchinfer/torchinfer-helpers.h"

extern "C" {

guint gst_torch_buffer_foreach_roi(GstBuffer* buffer, GstTorchRoiFunc func, gpointer user_data) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), 0);
  guint n = 0;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buffer, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    ++n;
    if (func && !func(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), user_data)) break;
  }
  return n;
}

namespace {
struct DetectionVisit {
  GstTorchDetectionFunc func;
  gpointer user_data;
  guint n;
};
}  // namespace

guint gst_torch_buffer_foreach_detection(GstBuffer* buffer, GstTorchDetectionFunc func,
                                         gpointer user_data) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), 0);
  DetectionVisit visit{func, user_data, 0};
  gst_torch_buffer_foreach_roi(
      buffer,
      [](GstVideoRegionOfInterestMeta* roi, gpointer u) -> gboolean {
        auto* v = static_cast<DetectionVisit*>(u);
        GstTorchDetection d;
        if (!gst_torch_detection_from_roi(roi, &d)) return TRUE;
        ++v->n;
        return !v->func || v->func(roi, &d, v->user_data);
      },
      &visit);
  return visit.n;
}

guint gst_torch_structure_foreach_structure(const GstStructure* structure, const gchar* field,
                                            GstTorchStructureFunc func, gpointer user_data) {
  g_return_val_if_fail(structure != nullptr && field != nullptr, 0);
  const GValue* a = gst_structure_get_value(structure, field);
  if (!a || !GST_VALUE_HOLDS_ARRAY(a)) return 0;
  guint n = 0;
  for (guint i = 0; i < gst_value_array_get_size(a); ++i) {
    const GValue* v = gst_value_array_get_value(a, i);
    if (!GST_VALUE_HOLDS_STRUCTURE(v)) continue;
    ++n;
    if (func && !func(gst_value_get_structure(v), user_data)) break;
  }
  return n;
}

gboolean gst_torch_roi_get_object_id(GstVideoRegionOfInterestMeta* roi, gint* id,
                                     gboolean* predicted) {
  g_return_val_if_fail(roi != nullptr && id != nullptr, FALSE);
  const GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_OBJECT_ID_STRUCTURE_NAME);
  gint v = 0;
  if (!s || !gst_structure_get_int(s, "id", &v)) return FALSE;
  *id = v;
  if (predicted) {
    gboolean p = FALSE;
    *predicted = gst_structure_get_boolean(s, "predicted", &p) && p;
  }
  return TRUE;
}

gboolean gst_torch_anomaly_get_map_rule(const GstStructure* anomaly, GstTorchAnomalyMapRule* rule) {
  g_return_val_if_fail(anomaly != nullptr && rule != nullptr, FALSE);
  *rule = GstTorchAnomalyMapRule{};
  rule->threshold = 0.5;
  const gboolean found = gst_structure_get_double(anomaly, "map_threshold", &rule->threshold);
  gdouble t = 0, lo = 0, hi = 0;
  if (gst_structure_get_double(anomaly, "map_norm_threshold", &t) &&
      gst_structure_get_double(anomaly, "map_norm_min", &lo) &&
      gst_structure_get_double(anomaly, "map_norm_max", &hi)) {
    rule->normalized = TRUE;
    rule->norm_threshold = t;
    rule->norm_min = lo;
    rule->norm_max = hi;
  }
  return found;
}

}  // extern "C"
