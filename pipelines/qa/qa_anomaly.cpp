#include "qa/qa_anomaly.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "decode/anomaly.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::qa {

namespace {

// The map as the core reads it; nullopt for a tensor that is not float.
std::optional<TensorView> map_view(const GstTorchTensor* t, const char* name) {
  if (t->dtype != GST_TORCH_DTYPE_FLOAT32 && t->dtype != GST_TORCH_DTYPE_FLOAT64)
    return std::nullopt;
  TensorView v;
  v.name = name;
  v.dtype = t->dtype == GST_TORCH_DTYPE_FLOAT32 ? DType::kFloat32 : DType::kFloat64;
  v.dims.assign(t->dims, t->dims + std::min<guint>(t->n_dims, GST_TORCH_MAX_DIMS));
  v.data = t->data;
  v.bytes = t->size;
  return v;
}

// The map over the part's box.
MapPlacement placement(const GstTorchTensorMeta* tm, const GstVideoRegionOfInterestMeta* roi) {
  const GstTorchTransform& t = tm->transform;
  return {static_cast<int>(tm->input_width),
          static_cast<int>(tm->input_height),
          t.scale_x,
          t.scale_y,
          t.offset_x,
          t.offset_y,
          double(roi->x),
          double(roi->y),
          double(roi->x) + roi->w,
          double(roi->y) + roi->h};
}

// The centre of the map's highest cell (NaN cells skipped), in frame pixels.
void find_peak(const TensorView& map, const MapPlacement& w, QaAnomalyView& v) {
  const std::size_t rank = map.dims.size();
  const std::int64_t h = map.dims[rank - 2], cols = map.dims[rank - 1];
  std::int64_t best = -1;
  double best_value = -INFINITY;
  for (std::int64_t i = 0; i < h * cols; ++i) {
    const double x = map.dtype == DType::kFloat32 ? static_cast<const float*>(map.data)[i]
                                                  : static_cast<const double*>(map.data)[i];
    if (x > best_value) {
      best = i;
      best_value = x;
    }
  }
  if (best < 0) return;
  const double mx = (best % cols + 0.5) * w.input_width / cols;
  const double my = (best / cols + 0.5) * w.input_height / h;
  v.peak_x = std::clamp((mx - w.offset_x) / w.scale_x, w.clip_x0, w.clip_x1);
  v.peak_y = std::clamp((my - w.offset_y) / w.scale_y, w.clip_y0, w.clip_y1);
}

// Peak and regions from the map in the part's tensor meta, if it has one.
void read_map(GstBuffer* buf, GstVideoRegionOfInterestMeta* roi, const GstStructure* s,
              QaAnomalyView& v) {
  const gchar* name = gst_structure_get_string(s, "map");
  GstTorchTensorMeta* tm = name && *name ? gst_buffer_get_torch_tensor_meta_for_roi(
                                               buf, roi->id, gst_structure_get_string(s, "model"))
                                         : nullptr;
  const GstTorchTensor* t = tm ? gst_torch_tensor_meta_get_tensor(tm, name) : nullptr;
  const auto map = t ? map_view(t, name) : std::nullopt;
  if (!map) return;
  const MapPlacement where = placement(tm, roi);
  find_peak(*map, where, v);
  // The rule torchinfer thresholded the map with (the public helper API).
  GstTorchAnomalyMapRule rule;
  gst_torch_anomaly_get_map_rule(s, &rule);
  const MapRule core_rule{rule.normalized ? std::optional<MinMaxNorm>(
                                                {rule.norm_threshold, rule.norm_min, rule.norm_max})
                                          : std::nullopt,
                          rule.threshold};
  for (const AnomalyRegion& r : anomaly_regions(*map, core_rule, where)) {
    if (v.regions.size() == kMaxRegions) break;
    v.regions.push_back({r.x_min, r.y_min, r.x_max, r.y_max});
  }
}

}  // namespace

std::optional<QaAnomalyView> read_anomaly_view(GstBuffer* buf, GstVideoRegionOfInterestMeta* roi) {
  const GstStructure* s = gst_torch_roi_get_anomaly(roi, kAnomalyElement);
  gboolean inferred = TRUE;
  if (!s || (gst_structure_get_boolean(s, "inferred", &inferred) && !inferred)) return std::nullopt;
  QaAnomalyView v;
  if (!gst_structure_get_double(s, "score", &v.score) ||
      !gst_structure_get_double(s, "threshold", &v.threshold))
    return std::nullopt;
  read_map(buf, roi, s, v);
  return v;
}

}  // namespace torchinfer::qa
