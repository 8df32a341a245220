// torchnms for torchinfer inference-region=tiles: a frame's tile tensor
// metas decoded each with its own mapping to the frame, and merged across
// the tile borders (decode/tile_merge.h).
#pragma once

#include <gst/gst.h>

#include <vector>

#include "decode/detection.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst::nms {

// The model input -> frame mapping a tensor meta carries (a tile's or a
// whole frame's).
FrameMapping mapping_of(const GstTorchTensorMeta* meta);

// The frame's tile metas (tile_count > 0) in tile order; empty if none.
std::vector<const GstTorchTensorMeta*> tile_metas(GstBuffer* buf);

// The frame's detections: each valid tile decoded into frame pixels, then
// merged class-wise (unless options.class_agnostic) at
// options.iou_threshold, the options.max_detections best kept. Throws like
// decode_detections.
std::vector<Detection> decode_tiles(Decoder decoder,
                                    const std::vector<const GstTorchTensorMeta*>& tiles,
                                    const DetectionOptions& options);

}  // namespace torchinfer::gst::nms
