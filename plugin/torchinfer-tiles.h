// inference-region=tiles glue: the frame's tiles handed to the session as
// regions (stream/tiles.h), and the tiles' results attached as tensor metas
// that torchnms decodes together (GstTorchTensorMeta tile_index/tile_count).
#pragma once

#include <gst/gst.h>

#include <optional>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "stream/stream_session.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {

// What the current tile regions were computed for.
struct TileGridKey {
  int frame_width = 0, frame_height = 0, tile_width = 0, tile_height = 0;
  bool operator==(const TileGridKey& o) const {
    return frame_width == o.frame_width && frame_height == o.frame_height &&
           tile_width == o.tile_width && tile_height == o.tile_height;
  }
};

// The tiles of a frame_width x frame_height frame as regions in `out`
// (roi_id = the tile's index, row by row), recomputed only when the frame
// or the tile size changed (`key` remembers them). tile-width/height 0 take
// the model's input size. Throws Error(kInvalidArgument) for a grid that
// cannot be made.
void tile_regions(const Settings& run, const ModelConfig& model, int frame_width, int frame_height,
                  TileGridKey* key, std::vector<RegionOfInterest>* out);

// One tensor meta per tile with a result (roi_id -1, tile_index,
// tile_count = the frame's tiles): inferred on this frame, or carried from
// the tile's latest inference (inferred FALSE, result_pts that frame's,
// skip_reason still when the tile gate judged it still, else frame_skip,
// else busy). Tiles attach no classification: a detector's tiles are
// decoded and merged by torchnms. A tile with no result yet gets no meta.
// Throws like add_tensor_meta.
void attach_tile_results(GstBuffer* buf, const FrameInference& rec,
                         std::optional<SkipReason> frame_skip,
                         const std::string& model_instance_id);

}  // namespace torchinfer::gst
