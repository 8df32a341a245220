// torchnms for torchinfer inference-region=tiles: a frame's tile tensor
// metas decoded each with its own mapping to the frame, and merged across
// the tile borders (decode/tile_merge.h).
#pragma once

#include <gst/gst.h>

#include <vector>

#include "decode/detection.h"
#include "decode/tile_merge.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst::nms {

// The model input -> frame mapping a tensor meta carries (a tile's or a
// whole frame's).
FrameMapping mapping_of(const GstTorchTensorMeta* meta);

// The frame's tile metas (tile_count > 0) in tile order; empty if none.
std::vector<const GstTorchTensorMeta*> tile_metas(GstBuffer* buf);

// Each tile's latest decoded result: a tile torchinfer carried over (not
// inferred on this frame: the motion gate judged it still, or the frame was
// not due) holds the tensors decoded when it was, so it is not decoded
// again. One stream's, streaming thread only; decode_tiles keeps it.
struct TileDecodeCache {
  struct Entry {
    bool set = false;
    GstClockTime result_pts = GST_CLOCK_TIME_NONE;
    guint tile_count = 0;
    TileDetections decoded;
  };
  std::vector<Entry> tiles;  // by tile_index
  std::uint64_t reused = 0;  // tiles taken from here, not decoded
};

// The frame's detections: each valid tile decoded into frame pixels (or,
// carried over, taken from `cache` when it holds that tile's result), then
// merged class-wise (unless options.class_agnostic) at
// options.iou_threshold, the options.max_detections best kept. Throws like
// decode_detections.
std::vector<Detection> decode_tiles(Decoder decoder,
                                    const std::vector<const GstTorchTensorMeta*>& tiles,
                                    const DetectionOptions& options, TileDecodeCache* cache);

}  // namespace torchinfer::gst::nms
