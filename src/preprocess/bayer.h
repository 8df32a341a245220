// Bilinear demosaicking of one row of a Bayer region, for the preprocessor's
// path when the region is not shrunk enough for 2x2 cell averaging (a small
// object in roi-list mode). Only the rows the resize reads are demosaicked,
// one at a time: no RGB copy of the region exists.
#pragma once

#include <cstdint>

namespace torchinfer {

struct BayerRegion {
  const std::uint8_t* origin;  // the region's top-left sample
  int stride;                  // bytes between rows
  int width, height;           // both even and at least 2
  int r_row, r_col;            // R's site in the 2x2 cell
};

// Packed 8-bit RGB of region row y (width * 3 bytes): each pixel keeps its
// own sample and takes the mean of its nearest same-colour neighbours
// (2 or 4) for the other two colours, rounded. Neighbours past the region's
// edge are mirrored (-1 -> 1, width -> width - 2), which keeps the colour
// phase, so a region is demosaicked as if it were a frame of its own.
void demosaic_bilinear_row(const BayerRegion& b, int y, std::uint8_t* rgb);

}  // namespace torchinfer
