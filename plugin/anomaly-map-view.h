// The map of an anomaly result ("anomaly" structure + its tensor meta) as
// the core's map, rule and frame placement: what torchmetaconvert's
// regions and torchoverlay's heat maps are computed from.
#pragma once

#include <gst/gst.h>

#include <optional>

#include "gst/torchinfer/torchinfer-meta.h"
#include "overlay/heatmap.h"

namespace torchinfer::gst {

// nullopt when the result has no map or its tensor is not in `tm`. The
// placement is clipped to [x0, x1) x [y0, y1) (the frame, or a part's box).
// The view points into the tensor meta: valid while the buffer lives.
std::optional<OverlayHeatMap> anomaly_map_view(const GstStructure* anomaly, GstTorchTensorMeta* tm,
                                               double x0, double y0, double x1, double y1);

// The frame's result (whole-frame mode) and each ROI's (roi-list mode),
// with their maps, in the order of the buffer's ROI metas after the frame.
struct AnomalyOnBuffer {
  const GstStructure* anomaly;
  std::optional<OverlayHeatMap> map;
};
std::vector<AnomalyOnBuffer> anomalies_of(GstBuffer* buf);

}  // namespace torchinfer::gst
