/* Reading torchinfer's results from a buffer (installed header, with
 * torchinfer-meta.h; library gsttorchinfer-meta-1.0).
 *
 * One reader for what every application and element otherwise loops over
 * by hand: the region-of-interest metas of a frame (in the order they were
 * attached), the detections among them, the track id torchtrack gave each,
 * the arrays of structures torchanalytics' counts are made of, and the rule
 * torchinfer thresholded an anomaly map with.
 *
 * The visitors call func once per item, in order, until it returns FALSE;
 * they return how many items func was called for (the one that stopped
 * included). func may be NULL: then they only count. The items belong to
 * the buffer (or structure) and are valid while it is; func must not add
 * or remove metas of the buffer it is visiting.
 *
 * C++ callers (C++17) also get gst_torch::foreach_roi(),
 * foreach_detection() and foreach_structure() at the end of this file,
 * which take any callable (a lambda with captures) returning void (visit
 * all) or bool (false stops).
 */
#ifndef GST_TORCHINFER_HELPERS_H
#define GST_TORCHINFER_HELPERS_H

#include <gst/gst.h>
#include <gst/video/video.h>

#include <gst/torchinfer/torchinfer-meta.h>

G_BEGIN_DECLS

/* The param structure torchtrack puts on each ROI it tracks: "id" (int,
 * from 1), "predicted" (boolean: the box is the track's prediction, the
 * detector saw nothing there on this frame) and "age" (int, frames). */
#define GST_TORCH_OBJECT_ID_STRUCTURE_NAME "object_id"

typedef gboolean (*GstTorchRoiFunc)(GstVideoRegionOfInterestMeta* roi, gpointer user_data);
typedef gboolean (*GstTorchDetectionFunc)(GstVideoRegionOfInterestMeta* roi,
                                          const GstTorchDetection* detection, gpointer user_data);
typedef gboolean (*GstTorchStructureFunc)(const GstStructure* structure, gpointer user_data);

/* Every GstVideoRegionOfInterestMeta of buffer, whoever attached it. */
guint gst_torch_buffer_foreach_roi(GstBuffer* buffer, GstTorchRoiFunc func, gpointer user_data);

/* Every ROI whose "detection" param is complete (see
 * gst_torch_detection_from_roi()), with that detection; other ROIs are
 * skipped and not counted. */
guint gst_torch_buffer_foreach_detection(GstBuffer* buffer, GstTorchDetectionFunc func,
                                         gpointer user_data);

/* Every structure in the array field `field` of structure (e.g. the
 * "lines" of torchanalytics' counts, the "by-class" of a line); values of
 * the array that are not structures are skipped and not counted. Nothing
 * when the field is missing or not an array. */
guint gst_torch_structure_foreach_structure(const GstStructure* structure, const gchar* field,
                                            GstTorchStructureFunc func, gpointer user_data);

/* torchtrack's id of the object on this ROI into *id (and whether its box
 * is predicted into *predicted, which may be NULL); FALSE and nothing
 * written when the ROI has no complete "object_id" param. */
gboolean gst_torch_roi_get_object_id(GstVideoRegionOfInterestMeta* roi, gint* id,
                                     gboolean* predicted);

/* How torchinfer decided an anomaly map's cells (docs/anomaly.md): a cell
 * is anomalous when its value, normalised when `normalized` with
 * clamp((raw - norm_threshold) / (norm_max - norm_min) + 0.5, 0, 1), is
 * >= threshold. */
typedef struct {
  gdouble threshold;
  gboolean normalized;
  gdouble norm_threshold, norm_min, norm_max;

  /*< private >*/
  gpointer _gst_reserved[4];
} GstTorchAnomalyMapRule;

/* Fills rule from an "anomaly" structure (gst_buffer_get_torch_anomaly(),
 * gst_torch_roi_get_anomaly()). A structure without "map_threshold" gives
 * anomalib's 0.5, without all three "map_norm_*" fields no normalisation;
 * returns whether "map_threshold" was there. */
gboolean gst_torch_anomaly_get_map_rule(const GstStructure* anomaly, GstTorchAnomalyMapRule* rule);

G_END_DECLS

#if defined(__cplusplus) && __cplusplus >= 201703L
#include <type_traits>

namespace gst_torch {
namespace detail {
template <class F, class... A>
gboolean call(F& f, A... a) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&, A...>>) {
    f(a...);
    return TRUE;
  } else {
    return f(a...) ? TRUE : FALSE;
  }
}
}  // namespace detail

/* f(GstVideoRegionOfInterestMeta*). An exception f throws passes through
 * (the library is C++) to the caller. */
template <class F>
guint foreach_roi(GstBuffer* buffer, F&& f) {
  return gst_torch_buffer_foreach_roi(
      buffer,
      [](GstVideoRegionOfInterestMeta* roi, gpointer u) {
        return detail::call(*static_cast<std::remove_reference_t<F>*>(u), roi);
      },
      const_cast<void*>(static_cast<const void*>(&f)));
}

/* f(GstVideoRegionOfInterestMeta*, const GstTorchDetection&). */
template <class F>
guint foreach_detection(GstBuffer* buffer, F&& f) {
  return gst_torch_buffer_foreach_detection(
      buffer,
      [](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection* d, gpointer u) {
        return detail::call<std::remove_reference_t<F>, GstVideoRegionOfInterestMeta*,
                            const GstTorchDetection&>(*static_cast<std::remove_reference_t<F>*>(u),
                                                      roi, *d);
      },
      const_cast<void*>(static_cast<const void*>(&f)));
}

/* f(const GstStructure*). */
template <class F>
guint foreach_structure(const GstStructure* structure, const char* field, F&& f) {
  return gst_torch_structure_foreach_structure(
      structure, field,
      [](const GstStructure* s, gpointer u) {
        return detail::call(*static_cast<std::remove_reference_t<F>*>(u), s);
      },
      const_cast<void*>(static_cast<const void*>(&f)));
}
}  // namespace gst_torch
#endif

#endif
