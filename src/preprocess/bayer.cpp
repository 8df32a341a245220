#include "preprocess/bayer.h"

namespace torchinfer {
namespace {

inline int avg2(int a, int b) {
  return (a + b + 1) >> 1;
}
inline int avg4(int a, int b, int c, int d) {
  return (a + b + c + d + 2) >> 2;
}

}  // namespace

void demosaic_bilinear_row(const BayerRegion& b, int y, std::uint8_t* rgb) {
  const int w = b.width;
  const std::uint8_t* row = b.origin + static_cast<std::ptrdiff_t>(y) * b.stride;
  const std::uint8_t* up = b.origin + static_cast<std::ptrdiff_t>(y == 0 ? 1 : y - 1) * b.stride;
  const std::uint8_t* down =
      b.origin + static_cast<std::ptrdiff_t>(y == b.height - 1 ? y - 1 : y + 1) * b.stride;
  // In R's row the other site is G with R left/right and B above/below; in
  // B's row the roles swap. R and B sites take G from the 4-neighbours and
  // the opposite colour from the diagonals.
  const bool r_row = (y & 1) == b.r_row;
  for (int x = 0; x < w; ++x) {
    const int l = x == 0 ? 1 : x - 1, r = x == w - 1 ? x - 1 : x + 1;
    const bool own_col = (x & 1) == b.r_col;  // the column of R (in R's row) or of G (in B's)
    const int c = row[x];
    std::uint8_t* o = rgb + 3 * x;
    if (r_row && own_col) {  // R site
      o[0] = static_cast<std::uint8_t>(c);
      o[1] = static_cast<std::uint8_t>(avg4(row[l], row[r], up[x], down[x]));
      o[2] = static_cast<std::uint8_t>(avg4(up[l], up[r], down[l], down[r]));
    } else if (!r_row && !own_col) {  // B site
      o[0] = static_cast<std::uint8_t>(avg4(up[l], up[r], down[l], down[r]));
      o[1] = static_cast<std::uint8_t>(avg4(row[l], row[r], up[x], down[x]));
      o[2] = static_cast<std::uint8_t>(c);
    } else if (r_row) {  // G between R (left/right) and B (up/down)
      o[0] = static_cast<std::uint8_t>(avg2(row[l], row[r]));
      o[1] = static_cast<std::uint8_t>(c);
      o[2] = static_cast<std::uint8_t>(avg2(up[x], down[x]));
    } else {  // G between B (left/right) and R (up/down)
      o[0] = static_cast<std::uint8_t>(avg2(up[x], down[x]));
      o[1] = static_cast<std::uint8_t>(c);
      o[2] = static_cast<std::uint8_t>(avg2(row[l], row[r]));
    }
  }
}

}  // namespace torchinfer
