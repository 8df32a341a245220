// What a stream's configuration asks of its camera (pixel format,
// exposure, gain, trigger), applied through Aravis and checked against what
// this camera offers, so a refusal can say what it does offer. Used by
// AravisSource on its camera thread.
#pragma once

#include <arv.h>

#include <string>

#include "server/core/camera_settings.h"

namespace torchinfer::server::aravis {

// The pixel format to ask for: the configured one if the camera offers it,
// else the camera's own if the analysis takes it. Empty with *why (the
// camera refuses) or *err (it did not answer) if neither.
std::string choose_format(ArvCamera* cam, const CameraSettings& set, std::string* why,
                          GError** err);

// Exposure, gain and the trigger source; false with *why or *err.
bool apply_features(ArvCamera* cam, const CameraSettings& set, std::string* why, GError** err);

}  // namespace torchinfer::server::aravis
