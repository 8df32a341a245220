#include "anomaly-map-view.h"

#include <algorithm>

#include "gst/torchinfer/torchinfer-helpers.h"
#include "tensor-views.h"

namespace torchinfer::gst {
std::optional<OverlayHeatMap> anomaly_map_view(const GstStructure* s, GstTorchTensorMeta* tm,
                                               double x0, double y0, double x1, double y1) {
  const gchar* name = gst_structure_get_string(s, "map");
  const GstTorchTensor* t =
      tm && name && *name ? gst_torch_tensor_meta_get_tensor(tm, name) : nullptr;
  if (!t) return std::nullopt;
  OverlayHeatMap v;
  v.map.name = name;
  v.map.dtype = from_gst_dtype(t->dtype);
  v.map.dims.assign(t->dims, t->dims + std::min<guint>(t->n_dims, GST_TORCH_MAX_DIMS));
  v.map.data = t->data;
  v.map.bytes = t->size;
  GstTorchAnomalyMapRule rule;  // read through the public helper API, as the apps do
  gst_torch_anomaly_get_map_rule(s, &rule);
  if (rule.normalized) v.rule.norm = MinMaxNorm{rule.norm_threshold, rule.norm_min, rule.norm_max};
  v.rule.threshold = rule.threshold;
  const GstTorchTransform& to_model = tm->transform;
  v.where = {static_cast<int>(tm->input_width),
             static_cast<int>(tm->input_height),
             to_model.scale_x,
             to_model.scale_y,
             to_model.offset_x,
             to_model.offset_y,
             x0,
             y0,
             x1,
             y1};
  return v;
}

std::vector<AnomalyOnBuffer> anomalies_of(GstBuffer* buf) {
  std::vector<AnomalyOnBuffer> out;
  if (const GstStructure* s = gst_buffer_get_torch_anomaly(buf)) {
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(buf);
    out.push_back(
        {s, tm ? anomaly_map_view(s, tm, 0, 0, tm->frame_width, tm->frame_height) : std::nullopt});
  }
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    const GstStructure* s = gst_torch_roi_get_anomaly(roi, nullptr);
    if (!s) return;
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta_for_roi(
        buf, roi->id, gst_structure_get_string(s, "model"));
    out.push_back({s, anomaly_map_view(s, tm, roi->x, roi->y, static_cast<double>(roi->x) + roi->w,
                                       static_cast<double>(roi->y) + roi->h)});
  });
  return out;
}

}  // namespace torchinfer::gst
