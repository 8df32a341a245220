#include "anomaly-meta.h"

#include <algorithm>

#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst {
namespace {

// Score, verdict and what a reader needs to threshold the map alike.
void set_fields(GstStructure* s, const AnomalyResult& r, const AnomalyConfig& cfg) {
  gst_structure_set(s, "score", G_TYPE_DOUBLE, r.score, "raw_score", G_TYPE_DOUBLE, r.raw_score,
                    "anomalous", G_TYPE_BOOLEAN, r.anomalous, "threshold", G_TYPE_DOUBLE,
                    r.threshold, "normalized", G_TYPE_BOOLEAN, r.normalized, "map", G_TYPE_STRING,
                    r.map_name.c_str(), nullptr);
  const MapRule rule = anomaly_map_rule(cfg);
  gst_structure_set(s, "map_threshold", G_TYPE_DOUBLE, rule.threshold, nullptr);
  if (rule.norm)
    gst_structure_set(s, "map_norm_threshold", G_TYPE_DOUBLE, rule.norm->threshold, "map_norm_min",
                      G_TYPE_DOUBLE, rule.norm->min, "map_norm_max", G_TYPE_DOUBLE, rule.norm->max,
                      nullptr);
}

}  // namespace

std::vector<ClassResult> anomaly_classes(const AnomalyResult& r) {
  const double p = std::clamp(r.score, 0.0, 1.0);
  ClassResult normal{0, "normal", 1.0 - p}, anomalous{1, "anomalous", p};
  if (r.anomalous) return {anomalous, normal};
  return {normal, anomalous};
}

void attach_anomaly(GstBuffer* buf, const AnomalyResult& r, const AnomalyConfig& cfg) {
  if (GstCustomMeta* old = gst_buffer_get_custom_meta(buf, GST_TORCH_ANOMALY_META_NAME))
    gst_buffer_remove_meta(buf, reinterpret_cast<GstMeta*>(old));
  if (GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCH_ANOMALY_META_NAME)) {
    GstStructure* s = gst_custom_meta_get_structure(cm);
    gst_structure_set_name(s, GST_TORCH_ANOMALY_STRUCTURE_NAME);
    set_fields(s, r, cfg);
  }
  attach_classification(buf, anomaly_classes(r));
}

void attach_roi_anomaly(GstVideoRegionOfInterestMeta* roi, const AnomalyResult& r,
                        const AnomalyConfig& cfg, const RoiClassificationSource& src) {
  for (GList* l = roi->params; l;) {
    GList* next = l->next;
    auto* old = static_cast<GstStructure*>(l->data);
    if (gst_structure_has_name(old, GST_TORCH_ANOMALY_STRUCTURE_NAME) &&
        g_strcmp0(gst_structure_get_string(old, "element"), src.element.c_str()) == 0) {
      roi->params = g_list_delete_link(roi->params, l);
      gst_structure_free(old);
    }
    l = next;
  }
  GstStructure* s = gst_structure_new_empty(GST_TORCH_ANOMALY_STRUCTURE_NAME);
  set_fields(s, r, cfg);
  gst_structure_set(s, "model", G_TYPE_STRING, src.model.c_str(), "model-instance-id",
                    G_TYPE_STRING, src.model_instance_id.c_str(), "element", G_TYPE_STRING,
                    src.element.c_str(), "inferred", G_TYPE_BOOLEAN, src.inferred, "result-pts",
                    G_TYPE_UINT64, static_cast<guint64>(src.result_pts), nullptr);
  gst_video_region_of_interest_meta_add_param(roi, s);
  attach_roi_classification(roi, anomaly_classes(r), src);
}

}  // namespace torchinfer::gst
