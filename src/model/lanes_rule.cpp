#include "model/lanes_rule.h"

#include <algorithm>
#include <cmath>

#include "model/model_loader.h"

namespace torchinfer {

LanesPlan choose_lanes(const LanesInput& in) {
  const int cores = std::max(1, in.physical_cores);
  // The threads to share out: `threads` if set (more than the cores only
  // oversubscribes, so lanes stay within the cores), else one per core.
  const int budget = in.threads > 0 ? in.threads : cores;
  LanesPlan plan;
  if (in.lanes > 0) {
    plan.lanes = in.lanes;
  } else {
    const int team = std::max(1, static_cast<int>(std::sqrt(static_cast<double>(budget))));
    plan.lanes = std::clamp(budget / team, 1, std::min({cores, budget, kMaxLanes}));
  }
  plan.threads_per_lane = std::max(1, budget / plan.lanes);
  return plan;
}

}  // namespace torchinfer
