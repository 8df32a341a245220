// Minimum-cost assignment of rows to columns (the Hungarian method), for
// matching tracks to detections. OpenCV has no public one; SORT uses an
// optimal assignment (scipy's linear_sum_assignment) rather than greedy
// matching because greedy best-IoU-first can steal a detection from the track
// that needs it when two objects overlap, swapping their ids.
#pragma once

#include <vector>

namespace torchinfer {

// cost[r][c] for a rows x cols matrix (rows may differ from cols; all rows
// must have the same length). Returns, per row, the column assigned to it or
// -1 when there are more rows than columns. Deterministic: ties go to the
// lower index.
std::vector<int> min_cost_assignment(const std::vector<std::vector<double>>& cost);

}  // namespace torchinfer
