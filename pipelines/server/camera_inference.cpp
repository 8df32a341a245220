#include "camera_inference.h"

namespace torchinfer::server {

void set_gate_and_tiles(GstElement* infer, const InferenceSettings& in) {
  // Typed: a double as text would follow the locale's decimal mark.
  const auto arg = [infer](const char* name, const auto& v) {
    if (v) g_object_set(infer, name, *v, nullptr);
  };
  if (in.motion_gate) gst_util_set_object_arg(G_OBJECT(infer), "inference-gate", "motion");
  if (in.tiles) gst_util_set_object_arg(G_OBJECT(infer), "inference-region", "tiles");
  arg("motion-threshold", in.motion_threshold);
  arg("motion-min-area", in.motion_min_area);
  arg("motion-hold", in.motion_hold);
  arg("motion-keyframe-interval", in.motion_keyframe_interval);
  arg("tile-width", in.tile_width);
  arg("tile-height", in.tile_height);
  arg("tile-overlap", in.tile_overlap);
}

}  // namespace torchinfer::server
