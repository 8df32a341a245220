#include "track/assignment.h"

#include <algorithm>
#include <limits>

#include "common/error.h"

namespace torchinfer {

namespace {

// Row r joins the matching along the shortest augmenting path from it,
// the potentials u (rows) and v (columns) updated on the way.
template <typename Cost>
void add_row(int r, int n, const Cost& at, std::vector<double>& u, std::vector<double>& v,
             std::vector<int>& row_of_col, std::vector<int>& way) {
  const double inf = std::numeric_limits<double>::infinity();
  row_of_col[0] = r;
  int col = 0;
  std::vector<double> min_to(n + 1, inf);
  std::vector<bool> used(n + 1, false);
  do {
    used[col] = true;
    const int row = row_of_col[col];
    double delta = inf;
    int next = 0;
    for (int c = 1; c <= n; ++c) {
      if (used[c]) continue;
      const double reduced = at(row - 1, c - 1) - u[row] - v[c];
      if (reduced < min_to[c]) {
        min_to[c] = reduced;
        way[c] = col;
      }
      if (min_to[c] < delta) {
        delta = min_to[c];
        next = c;
      }
    }
    for (int c = 0; c <= n; ++c) {
      if (used[c]) {
        u[row_of_col[c]] += delta;
        v[c] -= delta;
      } else {
        min_to[c] -= delta;
      }
    }
    col = next;
  } while (row_of_col[col] != 0);
  do {
    const int prev = way[col];
    row_of_col[col] = row_of_col[prev];
    col = prev;
  } while (col != 0);
}

}  // namespace

std::vector<int> min_cost_assignment(const std::vector<std::vector<double>>& cost) {
  const int rows = static_cast<int>(cost.size());
  if (rows == 0) return {};
  const int cols = static_cast<int>(cost[0].size());
  for (const auto& row : cost)
    if (static_cast<int>(row.size()) != cols)
      throw Error(ErrorKind::kInvalidArgument, "assignment cost matrix rows differ in length");
  // Pad to a square matrix: padded cells cost 0, so they never change which
  // real pairs are optimal; a row assigned to a padded column is unassigned.
  const int n = std::max(rows, cols);
  auto at = [&](int r, int c) { return r < rows && c < cols ? cost[r][c] : 0.0; };

  // Shortest augmenting paths with row/column potentials, O(n^3); arrays are
  // 1-based with column 0 as the virtual start.
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0);
  std::vector<int> row_of_col(n + 1, 0), way(n + 1, 0);
  for (int r = 1; r <= n; ++r) add_row(r, n, at, u, v, row_of_col, way);
  std::vector<int> result(rows, -1);
  for (int c = 1; c <= n; ++c) {
    const int r = row_of_col[c] - 1;
    if (r >= 0 && r < rows && c - 1 < cols) result[r] = c - 1;
  }
  return result;
}

}  // namespace torchinfer
