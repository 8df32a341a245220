// The classification result as the standard-readable custom meta (structure
// "classification": top-1 label, label_id, confidence; top-k arrays).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <string>

#include <vector>

#include "decode/classification.h"

namespace torchinfer::gst {

// Replaces any classification meta already on the buffer.
void attach_classification(GstBuffer* buf, const std::vector<ClassResult>& top);

// Who computed a region's classification.
struct RoiClassificationSource {
  std::string model, model_instance_id, element;
  bool inferred = true;              // false: reused from an earlier frame
  std::uint64_t result_pts = ~0ull;  // that frame's PTS (GST_CLOCK_TIME_NONE if unknown)
};

// Adds the "classification" param to a ROI meta (torchinfer-meta.h has the
// fields), replacing the one the same element attached before.
void attach_roi_classification(GstVideoRegionOfInterestMeta* roi,
                               const std::vector<ClassResult>& top,
                               const RoiClassificationSource& src);

}  // namespace torchinfer::gst
