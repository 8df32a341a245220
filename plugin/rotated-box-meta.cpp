// The "rotated_box" param of a detection ROI (yolov8-obb): written by
// torchnms, read by torchoverlay, torchinfer (deskewed crops) and the JSON
// exporter; part of the installed meta library.
#include <cmath>

#include "gst/torchinfer/torchinfer-meta.h"

extern "C" {

gboolean gst_torch_roi_add_rotated_box(GstVideoRegionOfInterestMeta* roi,
                                       const GstTorchRotatedBox* box) {
  g_return_val_if_fail(roi != nullptr && box != nullptr, FALSE);
  if (!std::isfinite(box->cx) || !std::isfinite(box->cy) || !std::isfinite(box->width) ||
      !std::isfinite(box->height) || !std::isfinite(box->angle) || !(box->width > 0) ||
      !(box->height > 0))
    return FALSE;
  gst_video_region_of_interest_meta_add_param(
      roi,
      gst_structure_new(GST_TORCH_ROTATED_BOX_STRUCTURE_NAME, "cx", G_TYPE_DOUBLE, box->cx, "cy",
                        G_TYPE_DOUBLE, box->cy, "width", G_TYPE_DOUBLE, box->width, "height",
                        G_TYPE_DOUBLE, box->height, "angle", G_TYPE_DOUBLE, box->angle, nullptr));
  return TRUE;
}

gboolean gst_torch_roi_get_rotated_box(GstVideoRegionOfInterestMeta* roi, GstTorchRotatedBox* out) {
  g_return_val_if_fail(roi != nullptr && out != nullptr, FALSE);
  const GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_ROTATED_BOX_STRUCTURE_NAME);
  if (!s) return FALSE;
  GstTorchRotatedBox b;
  // Another element may have written it: take it only whole and usable.
  if (!gst_structure_get_double(s, "cx", &b.cx) || !gst_structure_get_double(s, "cy", &b.cy) ||
      !gst_structure_get_double(s, "width", &b.width) ||
      !gst_structure_get_double(s, "height", &b.height) ||
      !gst_structure_get_double(s, "angle", &b.angle) || !std::isfinite(b.cx) ||
      !std::isfinite(b.cy) || !std::isfinite(b.width) || !std::isfinite(b.height) ||
      !std::isfinite(b.angle) || !(b.width > 0) || !(b.height > 0))
    return FALSE;
  *out = b;
  return TRUE;
}

}  // extern "C"
