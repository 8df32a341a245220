// inference-region=tiles: one frame's detections from its tiles' (torchnms).
//
// Each tile's outputs are decoded with the tile's own mapping, so its boxes
// are already in frame pixels; what is left is the object that a tile
// border cuts. With overlap, the tile that holds it whole and the tile that
// holds a piece of it both report it; an object wider than the overlap is
// reported as two pieces. The merge, class-wise (any class with
// class_agnostic), highest confidence first:
//  - a box is clipped to its tile; it is "cut" when one of its sides lies
//    within edge_px of a side of its tile that is not the frame's edge;
//  - a box joins a box already kept when their IoU > iou_threshold (plain
//    NMS), or when either is cut and their intersection over the smaller
//    box's area > iou_threshold (a piece inside the whole, or two pieces
//    meeting in the overlap);
//  - a joining box that is cut grows the kept box to the union of both
//    (the object's extent in the frame); otherwise it is dropped. The kept
//    box keeps its confidence, label and id; it stays "cut" only while every
//    box in it is cut (a whole view of the object ends the growing).
// The max_detections best survive, highest confidence first.
#pragma once

#include <vector>

#include "common/box.h"
#include "decode/detection.h"

namespace torchinfer {

struct TileDetections {
  Box tile;                           // the tile's pixels in the frame
  std::vector<Detection> detections;  // frame pixels
};

struct TileMergeOptions {
  int frame_width = 0, frame_height = 0;
  double iou_threshold = 0.45;
  int max_detections = 100;
  bool class_agnostic = false;
  double edge_px = 1.0;  // how near a tile's side a box's side must be to be cut by it
};

std::vector<Detection> merge_tile_detections(const std::vector<TileDetections>& tiles,
                                             const TileMergeOptions& options);

}  // namespace torchinfer
