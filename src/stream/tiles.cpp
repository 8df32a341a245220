#include "stream/tiles.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace torchinfer {

std::vector<int> tile_starts(int length, int tile, double overlap) {
  const int overlap_px = static_cast<int>(std::lround(overlap * tile));
  const int step = std::max(1, tile - overlap_px);
  std::vector<int> starts;
  const int last = length - tile;
  for (int x = 0; x < last; x += step) starts.push_back(x);
  // The last tile ends on the frame's edge (full size, inside the frame).
  starts.push_back(last);
  return starts;
}

std::vector<Crop> tile_grid(int frame_width, int frame_height, const TileGridOptions& o) {
  if (frame_width <= 0 || frame_height <= 0)
    throw Error(ErrorKind::kInvalidArgument, "tiles: the frame has no pixels (" +
                                                 std::to_string(frame_width) + "x" +
                                                 std::to_string(frame_height) + ")");
  if (o.tile_width <= 0 || o.tile_height <= 0)
    throw Error(ErrorKind::kInvalidArgument,
                "tile-width and tile-height must be > 0 pixels (0 means the model's input "
                "size), got " +
                    std::to_string(o.tile_width) + "x" + std::to_string(o.tile_height));
  // The negated test also refuses NaN.
  if (!(o.overlap >= 0 && o.overlap <= kMaxTileOverlap))
    throw Error(ErrorKind::kInvalidArgument,
                "tile-overlap must be a fraction from 0 to 0.9 of a tile, got " +
                    std::to_string(o.overlap));
  const int tw = std::min(o.tile_width, frame_width);
  const int th = std::min(o.tile_height, frame_height);
  const std::vector<int> xs = tile_starts(frame_width, tw, o.overlap);
  const std::vector<int> ys = tile_starts(frame_height, th, o.overlap);
  std::vector<Crop> tiles;
  tiles.reserve(xs.size() * ys.size());
  for (int y : ys)
    for (int x : xs) tiles.push_back(Crop{x, y, tw, th});
  return tiles;
}

}  // namespace torchinfer
