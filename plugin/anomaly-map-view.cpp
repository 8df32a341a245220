#include "anomaly-map-view.h"

#include <algorithm>

#include "anomaly-map-rule.h"
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
  v.rule = map_rule(s);
  MapPlacement& w = v.where;
  w.input_width = static_cast<int>(tm->input_width);
  w.input_height = static_cast<int>(tm->input_height);
  w.scale_x = tm->transform.scale_x;
  w.scale_y = tm->transform.scale_y;
  w.offset_x = tm->transform.offset_x;
  w.offset_y = tm->transform.offset_y;
  w.clip_x0 = x0;
  w.clip_y0 = y0;
  w.clip_x1 = x1;
  w.clip_y1 = y1;
  return v;
}

std::vector<AnomalyOnBuffer> anomalies_of(GstBuffer* buf) {
  std::vector<AnomalyOnBuffer> out;
  if (const GstStructure* s = gst_buffer_get_torch_anomaly(buf)) {
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(buf);
    out.push_back(
        {s, tm ? anomaly_map_view(s, tm, 0, 0, tm->frame_width, tm->frame_height) : std::nullopt});
  }
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    const GstStructure* s = gst_torch_roi_get_anomaly(roi, nullptr);
    if (!s) continue;
    GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta_for_roi(
        buf, roi->id, gst_structure_get_string(s, "model"));
    out.push_back({s, anomaly_map_view(s, tm, roi->x, roi->y, static_cast<double>(roi->x) + roi->w,
                                       static_cast<double>(roi->y) + roi->h)});
  }
  return out;
}

}  // namespace torchinfer::gst
