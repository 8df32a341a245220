#include "decode/tile_merge.h"

#include <algorithm>

namespace torchinfer {

namespace {

struct Candidate {
  Detection det;
  bool cut = false;
};

// Whether a side of `b` lies on a side of `tile` inside the frame.
bool cut_by_tile(const Box& b, const Box& tile, const TileMergeOptions& o) {
  const double e = o.edge_px;
  return (tile.x_min > 0 && b.x_min <= tile.x_min + e) ||
         (tile.y_min > 0 && b.y_min <= tile.y_min + e) ||
         (tile.x_max < o.frame_width && b.x_max >= tile.x_max - e) ||
         (tile.y_max < o.frame_height && b.y_max >= tile.y_max - e);
}

std::vector<Candidate> candidates(const std::vector<TileDetections>& tiles,
                                  const TileMergeOptions& o) {
  std::vector<Candidate> out;
  for (const TileDetections& t : tiles)
    for (Detection d : t.detections) {
      d.x_min = std::clamp(d.x_min, t.tile.x_min, t.tile.x_max);
      d.x_max = std::clamp(d.x_max, t.tile.x_min, t.tile.x_max);
      d.y_min = std::clamp(d.y_min, t.tile.y_min, t.tile.y_max);
      d.y_max = std::clamp(d.y_max, t.tile.y_min, t.tile.y_max);
      if (d.box().area() <= 0) continue;
      const bool cut = cut_by_tile(d.box(), t.tile, o);
      out.push_back({std::move(d), cut});
    }
  // Stable: equal confidences keep the tiles' order, so the merge is
  // deterministic.
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.det.confidence > b.det.confidence;
  });
  return out;
}

bool joins(const Candidate& c, const Candidate& kept, const TileMergeOptions& o) {
  if (!o.class_agnostic && c.det.label_id != kept.det.label_id) return false;
  const Box a = c.det.box(), b = kept.det.box();
  if (iou(a, b) > o.iou_threshold) return true;
  if (!c.cut && !kept.cut) return false;
  const double smaller = std::min(a.area(), b.area());
  return smaller > 0 && intersection_area(a, b) / smaller > o.iou_threshold;
}

}  // namespace

std::vector<Detection> merge_tile_detections(const std::vector<TileDetections>& tiles,
                                             const TileMergeOptions& o) {
  std::vector<Candidate> kept;
  for (Candidate& c : candidates(tiles, o)) {
    auto it =
        std::find_if(kept.begin(), kept.end(), [&](const Candidate& k) { return joins(c, k, o); });
    if (it == kept.end()) {
      kept.push_back(std::move(c));
      continue;
    }
    if (c.cut) {
      Detection& d = it->det;
      d.x_min = std::min(d.x_min, c.det.x_min);
      d.y_min = std::min(d.y_min, c.det.y_min);
      d.x_max = std::max(d.x_max, c.det.x_max);
      d.y_max = std::max(d.y_max, c.det.y_max);
    }
    it->cut = it->cut && c.cut;
  }
  std::vector<Detection> out;
  out.reserve(
      std::min<std::size_t>(kept.size(), static_cast<std::size_t>(std::max(0, o.max_detections))));
  for (Candidate& k : kept) {
    if (static_cast<int>(out.size()) >= o.max_detections) break;
    out.push_back(std::move(k.det));
  }
  return out;
}

}  // namespace torchinfer
