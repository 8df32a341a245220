// The engine's options that a model's sidecar decides (its input size,
// channels, dtype and layout, whether it is int8): one reading for the
// torchinfer element and torchinfer-selfcheck, so the self-check runs a
// model the way the element does.
#pragma once

#include <string>

#include "common/model_config.h"
#include "engine/engine.h"

namespace torchinfer {

EngineOptions engine_options_for(const std::string& model_path, const ModelConfig& config);

}  // namespace torchinfer
