#include "torchnms-tiles.h"

#include <algorithm>
#include <cmath>

#include "decode/tile_merge.h"
#include "tensor-views.h"

namespace torchinfer::gst::nms {

std::vector<const GstTorchTensorMeta*> tile_metas(GstBuffer* buf) {
  std::vector<const GstTorchTensorMeta*> out;
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    const auto* t = reinterpret_cast<const GstTorchTensorMeta*>(m);
    if (t->tile_count > 0) out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto* a, const auto* b) { return a->tile_index < b->tile_index; });
  return out;
}

FrameMapping mapping_of(const GstTorchTensorMeta* meta) {
  FrameMapping m;
  m.scale_x = meta->transform.scale_x;
  m.scale_y = meta->transform.scale_y;
  m.offset_x = meta->transform.offset_x;
  m.offset_y = meta->transform.offset_y;
  m.frame_width = static_cast<int>(meta->frame_width);
  m.frame_height = static_cast<int>(meta->frame_height);
  m.input_width = static_cast<int>(meta->input_width);
  m.input_height = static_cast<int>(meta->input_height);
  return m;
}

namespace {

// The frame pixels the model input of a tile covers: the tile itself for a
// tile of the model's shape (tiles start and end on whole pixels; the
// rounding removes the transform's floating-point error).
Box tile_box(const FrameMapping& m) {
  const auto to_frame = [](double model, double scale, double offset, int frame) {
    return std::clamp(std::round((model - offset) / scale), 0.0, static_cast<double>(frame));
  };
  return {to_frame(0, m.scale_x, m.offset_x, m.frame_width),
          to_frame(0, m.scale_y, m.offset_y, m.frame_height),
          to_frame(m.input_width, m.scale_x, m.offset_x, m.frame_width),
          to_frame(m.input_height, m.scale_y, m.offset_y, m.frame_height)};
}

}  // namespace

std::vector<Detection> decode_tiles(Decoder decoder,
                                    const std::vector<const GstTorchTensorMeta*>& tiles,
                                    const DetectionOptions& options, TileDecodeCache* cache) {
  std::vector<TileDetections> decoded;
  decoded.reserve(tiles.size());
  TileMergeOptions merge;
  merge.iou_threshold = options.iou_threshold;
  merge.max_detections = options.max_detections;
  merge.class_agnostic = options.class_agnostic;
  for (const GstTorchTensorMeta* t : tiles) {
    // NaN/infinite outputs (torchinfer warned): that tile's boxes are noise.
    if (!t->valid) continue;
    const FrameMapping m = mapping_of(t);
    merge.frame_width = m.frame_width;
    merge.frame_height = m.frame_height;
    TileDecodeCache::Entry* e = nullptr;
    if (cache && t->tile_index >= 0) {
      const auto k = static_cast<std::size_t>(t->tile_index);
      if (cache->tiles.size() <= k) cache->tiles.resize(k + 1);
      e = &cache->tiles[k];
    }
    if (e && !t->inferred && e->set && e->result_pts == t->result_pts &&
        e->tile_count == t->tile_count) {
      ++cache->reused;
      decoded.push_back(e->decoded);
      continue;
    }
    decoded.push_back({tile_box(m), decode_detections(decoder, tensor_views(t), options, m)});
    if (e) *e = {true, t->result_pts, t->tile_count, decoded.back()};
  }
  return merge_tile_detections(decoded, merge);
}

}  // namespace torchinfer::gst::nms
