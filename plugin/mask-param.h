// The "mask" param of a detection ROI (torchnms decoder yolov8-seg; layout
// in the installed torchinfer-meta.h): written by torchnms, read back by
// torchoverlay and the JSON exporters.
#pragma once

#include <gst/video/video.h>

#include <optional>

#include "decode/yolov8_seg.h"

namespace torchinfer::gst {

void add_mask_param(GstVideoRegionOfInterestMeta* roi, const Mask& mask, double threshold);

// nullopt without a structure, or when a field is missing or the runs do not
// cover width * height.
std::optional<Mask> read_mask_param(const GstStructure* s);

}  // namespace torchinfer::gst
