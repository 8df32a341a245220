// inference-region=tiles: the grid of model-sized tiles that covers a large
// frame (5-12 MP machine-vision sensors), so that defects a few pixels wide
// reach the model at full resolution instead of vanishing when the whole
// frame is shrunk to its input. Each tile is inferred as a region (the
// roi-list crop path: cropped and resized straight from the camera format,
// no full-frame copy); the tiles' detections are merged back into one
// frame's detections by decode/tile_merge.h. No GStreamer types.
#pragma once

#include <vector>

#include "preprocess/preprocess.h"

namespace torchinfer {

struct TileGridOptions {
  int tile_width = 0, tile_height = 0;  // frame pixels, > 0 (0 is resolved by the caller)
  double overlap = 0.2;                 // fraction of a tile shared with its neighbour
};

constexpr double kMaxTileOverlap = 0.9;

// The tiles covering a frame of frame_width x frame_height, row by row, left
// to right. Per axis: the overlap in pixels is round(overlap x tile) (half
// away from zero), the step tile - overlap (at least 1 pixel); the last tile
// of a row (column) is shifted back to end on the frame's edge, so every
// tile has the full tile size. A tile larger than the frame along an axis
// is cut to the frame's size there (one tile along that axis): tiles never
// leave the frame. Throws Error(kInvalidArgument), naming the value and its
// range, for a frame or tile size <= 0 or an overlap outside
// 0..kMaxTileOverlap (or not a number).
std::vector<Crop> tile_grid(int frame_width, int frame_height, const TileGridOptions& options);

// The start of each tile along one axis of `length` pixels (tile_grid's
// rule, for one axis); `tile` is already cut to the length.
std::vector<int> tile_starts(int length, int tile, double overlap);

}  // namespace torchinfer
