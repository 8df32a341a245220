// A camera's torchinfer gate and tiles (docs/server.md, "Motion gate and
// tiles"): "inference_gate" with the motion-* values, "inference_region"
// with the tile sizes, mirroring torchinfer's properties of the same names
// (docs/elements.md). Unset values keep the element's defaults. No
// GStreamer here.
#pragma once

#include <optional>
#include <string>

namespace torchinfer::server {

struct InferenceSettings {
  bool motion_gate = false;                     // "inference_gate": "motion" (default "none")
  std::optional<double> motion_threshold;       // 0..255 luma levels
  std::optional<double> motion_min_area;        // 0..1 of the frame's cells
  std::optional<int> motion_hold;               // frames
  std::optional<int> motion_keyframe_interval;  // frames, >= 1
  bool tiles = false;                          // "inference_region": "tiles" (default "full-frame")
  std::optional<int> tile_width, tile_height;  // frame pixels; 0 = the model's input
  std::optional<double> tile_overlap;          // 0..0.9
};

}  // namespace torchinfer::server
