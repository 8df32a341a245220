// The anomaly model's result on one part view (torchinfer name=anomaly,
// inference-region=roi-list): its score and decision threshold, where its
// map peaks and its anomalous regions, in frame pixels.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <optional>

#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

// The name the app gives its anomaly torchinfer element: its results on a
// part are found by it.
constexpr const char* kAnomalyElement = "anomaly";

// At most this many regions per view are kept (torchmetaconvert's limit).
constexpr std::size_t kMaxRegions = 32;

// nullopt when the part has no anomaly result of this frame's own (none,
// or one reused from an earlier frame: that view was judged already).
std::optional<QaAnomalyView> read_anomaly_view(GstBuffer* buf, GstVideoRegionOfInterestMeta* roi);

}  // namespace torchinfer::qa
