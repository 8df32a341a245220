#include "mask-param.h"

#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst {

void add_mask_param(GstVideoRegionOfInterestMeta* roi, const Mask& mask, double threshold) {
  GValue runs = G_VALUE_INIT;
  gst_value_array_init(&runs, static_cast<guint>(mask.runs.size()));
  for (std::uint32_t r : mask.runs) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_UINT);
    g_value_set_uint(&v, r);
    gst_value_array_append_and_take_value(&runs, &v);
  }
  GstStructure* s = gst_structure_new(
      GST_TORCH_MASK_STRUCTURE_NAME, "x", G_TYPE_UINT, static_cast<guint>(mask.x), "y", G_TYPE_UINT,
      static_cast<guint>(mask.y), "width", G_TYPE_UINT, static_cast<guint>(mask.width), "height",
      G_TYPE_UINT, static_cast<guint>(mask.height), "area", G_TYPE_UINT64,
      static_cast<guint64>(mask.area), "threshold", G_TYPE_DOUBLE, threshold, "encoding",
      G_TYPE_STRING, "rle-rows", nullptr);
  gst_structure_take_value(s, "rle", &runs);
  gst_video_region_of_interest_meta_add_param(roi, s);
}

std::optional<Mask> read_mask_param(const GstStructure* s) {
  if (!s) return std::nullopt;
  guint x = 0, y = 0, w = 0, h = 0;
  guint64 area = 0;
  const GValue* runs = gst_structure_get_value(s, "rle");
  if (!gst_structure_get_uint(s, "x", &x) || !gst_structure_get_uint(s, "y", &y) ||
      !gst_structure_get_uint(s, "width", &w) || !gst_structure_get_uint(s, "height", &h) ||
      !gst_structure_get_uint64(s, "area", &area) || !runs || !GST_VALUE_HOLDS_ARRAY(runs))
    return std::nullopt;
  Mask m;
  m.x = static_cast<int>(x);
  m.y = static_cast<int>(y);
  m.width = static_cast<int>(w);
  m.height = static_cast<int>(h);
  m.area = area;
  guint64 total = 0;
  for (guint i = 0; i < gst_value_array_get_size(runs); ++i) {
    const GValue* v = gst_value_array_get_value(runs, i);
    if (!G_VALUE_HOLDS_UINT(v)) return std::nullopt;
    m.runs.push_back(g_value_get_uint(v));
    total += m.runs.back();
  }
  if (total != static_cast<guint64>(w) * h) return std::nullopt;
  return m;
}

}  // namespace torchinfer::gst
