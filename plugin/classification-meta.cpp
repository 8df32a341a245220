#include "classification-meta.h"

#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst {

namespace {

// label, label_id, confidence (top-1) and the top-k arrays.
void set_top_k(GstStructure* s, const std::vector<ClassResult>& top) {
  gst_structure_set(s, "label", G_TYPE_STRING, top[0].label.c_str(), "label_id", G_TYPE_INT,
                    top[0].label_id, "confidence", G_TYPE_DOUBLE, top[0].confidence, nullptr);
  GValue labels = G_VALUE_INIT, ids = G_VALUE_INIT, confs = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&labels, top.size());
  gst_value_array_init(&ids, top.size());
  gst_value_array_init(&confs, top.size());
  for (const auto& r : top) {
    g_value_init(&v, G_TYPE_STRING);
    g_value_set_string(&v, r.label.c_str());
    gst_value_array_append_and_take_value(&labels, &v);
    g_value_init(&v, G_TYPE_INT);
    g_value_set_int(&v, r.label_id);
    gst_value_array_append_and_take_value(&ids, &v);
    g_value_init(&v, G_TYPE_DOUBLE);
    g_value_set_double(&v, r.confidence);
    gst_value_array_append_and_take_value(&confs, &v);
  }
  gst_structure_take_value(s, "labels", &labels);
  gst_structure_take_value(s, "label_ids", &ids);
  gst_structure_take_value(s, "confidences", &confs);
}

}  // namespace

void attach_classification(GstBuffer* buf, const std::vector<ClassResult>& top) {
  // One classification meta per buffer: a later decoder replaces an earlier one.
  if (GstCustomMeta* old = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME))
    gst_buffer_remove_meta(buf, reinterpret_cast<GstMeta*>(old));
  GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm || top.empty()) return;
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set_name(s, "classification");
  set_top_k(s, top);
}

void attach_roi_classification(GstVideoRegionOfInterestMeta* roi,
                               const std::vector<ClassResult>& top,
                               const RoiClassificationSource& src) {
  if (top.empty()) return;
  // The params list is the ROI meta's public GList of owned structures.
  for (GList* l = roi->params; l;) {
    GList* next = l->next;
    auto* old = static_cast<GstStructure*>(l->data);
    if (gst_structure_has_name(old, GST_TORCH_ROI_CLASSIFICATION_STRUCTURE_NAME) &&
        g_strcmp0(gst_structure_get_string(old, "element"), src.element.c_str()) == 0) {
      roi->params = g_list_delete_link(roi->params, l);
      gst_structure_free(old);
    }
    l = next;
  }
  GstStructure* s = gst_structure_new_empty(GST_TORCH_ROI_CLASSIFICATION_STRUCTURE_NAME);
  set_top_k(s, top);
  gst_structure_set(s, "model", G_TYPE_STRING, src.model.c_str(), "model-instance-id",
                    G_TYPE_STRING, src.model_instance_id.c_str(), "element", G_TYPE_STRING,
                    src.element.c_str(), "inferred", G_TYPE_BOOLEAN, src.inferred, "result-pts",
                    G_TYPE_UINT64, static_cast<guint64>(src.result_pts), nullptr);
  gst_video_region_of_interest_meta_add_param(roi, s);
}

}  // namespace torchinfer::gst
