// The anomaly part of a sidecar (task "anomaly"), and anomalib's own
// metadata.json read as a sidecar. Private to model_config.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/model_config.h"

namespace torchinfer {

// Keys only an anomaly sidecar may hold.
const std::set<std::string>& anomaly_sidecar_keys();

// anomalib's metadata.json: it carries "transform" (an albumentations dict).
// Such a file may also hold anomalib's other keys and its "task" values.
bool is_anomalib_metadata(const nlohmann::json& j);
const std::set<std::string>& anomalib_metadata_keys();

// Reads the anomaly keys into cfg.anomaly and, for an anomalib file, its task
// and transform (input size, mean/std) unless the sidecar's own keys set them.
// Contradictions (min >= max, a threshold outside [min, max], a threshold
// without its min/max) throw kConfigInvalid naming the file and the key.
void parse_anomaly_keys(const nlohmann::json& j, const std::string& origin, ModelConfig& cfg);

// After element overrides: sensitivity needs thresholds to shift.
void check_anomaly_config(const ModelConfig& cfg);

}  // namespace torchinfer
