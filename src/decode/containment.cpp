#include "decode/containment.h"

#include <algorithm>

#include "decode/yolov8_obb.h"

namespace torchinfer {
namespace {

// Is dets[i] the smaller one of the pair, lying inside dets[k]?
bool inside(const std::vector<Detection>& dets, std::size_t i, std::size_t k, double fraction) {
  const Detection& s = dets[i];
  const Detection& b = dets[k];
  if (s.label_id != b.label_id) return false;
  // Rotated boxes (yolov8-obb) by their own outlines: their axis-aligned
  // bounds hold much background and would swallow neighbours.
  const bool turned = s.rotated && b.rotated;
  const double as = turned ? s.rotated->area() : s.box().area();
  const double ab = turned ? b.rotated->area() : b.box().area();
  if (as > ab || (as == ab && i < k) || as <= 0) return false;
  const double inter = turned ? rotated_intersection_area(*s.rotated, *b.rotated)
                              : intersection_area(s.box(), b.box());
  return inter >= fraction * as;
}

}  // namespace

std::size_t suppress_contained(std::vector<Detection>& dets, double fraction) {
  if (fraction <= 0 || dets.size() < 2) return 0;
  std::vector<bool> drop(dets.size(), false);
  for (std::size_t i = 0; i < dets.size(); ++i)
    for (std::size_t k = 0; k < dets.size() && !drop[i]; ++k)
      drop[i] = k != i && inside(dets, i, k, fraction);
  std::vector<Detection> kept;
  kept.reserve(dets.size());
  for (std::size_t i = 0; i < dets.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(dets[i]));
  const std::size_t removed = dets.size() - kept.size();
  dets = std::move(kept);
  return removed;
}

}  // namespace torchinfer
