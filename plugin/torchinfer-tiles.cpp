#include "torchinfer-tiles.h"

#include "stream/tiles.h"
#include "torchinfer-results.h"

namespace torchinfer::gst {

void tile_regions(const Settings& run, const ModelConfig& model, int frame_width, int frame_height,
                  TileGridKey* key, std::vector<RegionOfInterest>* out) {
  const TileGridKey want{frame_width, frame_height,
                         run.tile_width.value_or(0) > 0 ? *run.tile_width : model.input_width,
                         run.tile_height.value_or(0) > 0 ? *run.tile_height : model.input_height};
  if (want == *key && !out->empty()) return;
  const std::vector<Crop> tiles =
      tile_grid(frame_width, frame_height,
                {want.tile_width, want.tile_height, run.tile_overlap.value_or(0.2)});
  out->assign(tiles.size(), RegionOfInterest{});
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    RegionOfInterest& r = (*out)[i];
    r.x = tiles[i].x;
    r.y = tiles[i].y;
    r.width = tiles[i].width;
    r.height = tiles[i].height;
    r.roi_id = static_cast<int>(i);
  }
  *key = want;
}

// Why a tile carries a result it was not inferred on: the gate judged it
// still, else the frame's reason (not due, or all still), else its batch
// slot was dropped (busy).
static GstTorchSkipReason tile_skip(const RegionResult& region, std::optional<SkipReason> frame) {
  SkipReason why = SkipReason::kBusy;
  if (region.still)
    why = SkipReason::kStill;
  else if (frame)
    why = *frame;
  return static_cast<GstTorchSkipReason>(static_cast<int>(why) + 1);
}

void attach_tile_results(GstBuffer* buf, const FrameInference& rec,
                         std::optional<SkipReason> frame_skip,
                         const std::string& model_instance_id) {
  for (std::size_t i = 0; i < rec.regions.size(); ++i) {
    const RegionResult& region = rec.regions[i];
    if (region.slot < 0) continue;
    const SlotResult& slot = rec.slots[static_cast<std::size_t>(region.slot)];
    if (!slot.delivered || !slot.result.output) continue;
    TensorMetaInfo info;
    info.valid = slot.result.output->frame_finite(slot.result.index);
    info.result_pts = region.result_pts;
    info.inferred = !region.reused;
    if (region.reused) info.skip = tile_skip(region, frame_skip);
    info.tile_index = static_cast<gint>(i);
    info.tile_count = static_cast<guint>(rec.regions.size());
    add_tensor_meta(buf, rec, slot, info, model_instance_id);
  }
}

}  // namespace torchinfer::gst
