// A camera's torchinfer motion gate and tiles (docs/server.md, "Motion
// gate and tiles") set on its torchinfer element.
#pragma once

#include <gst/gst.h>

#include "server/core/inference_settings.h"

namespace torchinfer::server {

// Unset values keep the element's defaults.
void set_gate_and_tiles(GstElement* infer, const InferenceSettings& in);

}  // namespace torchinfer::server
