// Anomaly results (task "anomaly") on a buffer: the "classification"
// (normal/anomalous) and the "anomaly" structure, on the frame or on a ROI
// (fields in gst/torchinfer/torchinfer-meta.h).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <vector>

#include "classification-meta.h"
#include "common/model_config.h"
#include "decode/anomaly.h"

namespace torchinfer::gst {

// The verdict as a two-class result, verdict first: confidence = score
// (clamped to 0..1) when anomalous, 1 - score when normal.
std::vector<ClassResult> anomaly_classes(const AnomalyResult& r);

// Replaces the frame's anomaly meta and classification meta.
void attach_anomaly(GstBuffer* buf, const AnomalyResult& r, const AnomalyConfig& cfg);

// Adds the "anomaly" and "classification" params to a ROI, replacing the
// ones the same element attached before.
void attach_roi_anomaly(GstVideoRegionOfInterestMeta* roi, const AnomalyResult& r,
                        const AnomalyConfig& cfg, const RoiClassificationSource& src);

}  // namespace torchinfer::gst
