#include "codes/view_quality.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace torchinfer {

double view_quality(const LumaView& frame, const CodeBox& area) {
  if (!check_luma_view(frame).empty()) return 0;
  const int x0 = std::max(0, static_cast<int>(std::floor(area.x_min)));
  const int y0 = std::max(0, static_cast<int>(std::floor(area.y_min)));
  const int x1 = std::min(frame.width, static_cast<int>(std::ceil(area.x_max)));
  const int y1 = std::min(frame.height, static_cast<int>(std::ceil(area.y_max)));
  if (x1 - x0 < 2 || y1 - y0 < 2) return 0;
  const double pixels = static_cast<double>(x1 - x0) * (y1 - y0);
  // Every step-th row and column, walked whole (a sparser walk along a row
  // would miss the edges of modules aligned with its step): the grid of
  // rows and columns has about kQualitySamples crossings.
  const int step = std::max(1, static_cast<int>(std::ceil(std::sqrt(pixels / kQualitySamples))));
  auto at = [&](int x, int y) {
    return static_cast<int>(frame.data[static_cast<std::size_t>(y) * frame.row_stride +
                                       static_cast<std::size_t>(x) * frame.pixel_stride]);
  };
  double sum = 0;
  std::size_t n = 0;
  for (int y = y0; y < y1; y += step)
    for (int x = x0; x + 1 < x1; ++x, ++n) sum += std::abs(at(x + 1, y) - at(x, y));
  for (int x = x0; x < x1; x += step)
    for (int y = y0; y + 1 < y1; ++y, ++n) sum += std::abs(at(x, y + 1) - at(x, y));
  return n ? pixels * sum / n : 0;
}

void order_best_first(std::vector<DueView>& views) {
  std::stable_sort(views.begin(), views.end(), [](const DueView& a, const DueView& b) {
    if (a.unread != b.unread) return a.unread;
    return a.quality > b.quality;
  });
}

}  // namespace torchinfer
