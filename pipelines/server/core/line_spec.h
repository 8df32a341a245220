// A camera's way to the line (docs/server.md, "Parts and the PLC"):
// "parts" makes one pass/reject verdict per tracked part with the QA line's
// rules (qa/part_verdicts.h), "plc" sends those verdicts to a PLC with the
// settings of the QA app's station file (lineio/plc_settings.h, the same
// names and meaning). Both are hostile input, checked field by field. No
// GStreamer here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lineio/plc_settings.h"
#include "parts/core/part_verdicts.h"

namespace torchinfer::server {

struct PartsSpec {
  // A configured model's id that classifies each part crop (the QA app's
  // --classifier); empty: the detector's own defect boxes judge.
  std::string classifier;
  QaRules rules;                // part and defect classes, the rule, thresholds
  double part_threshold = 0.5;  // a part box below this confidence is no part
};

struct PlcSpec {
  nlohmann::json settings;  // as given (GET /streams/{id} shows them back)
  PlcOptions options;       // parsed and checked
};

// `j` is the stream's "parts" at field path `field`; `models` the configured
// model ids; `track` the stream's. Throws FieldError.
PartsSpec parse_parts_spec(const nlohmann::json& j, const std::string& field,
                           const std::string& origin, const std::vector<std::string>& models,
                           bool track);
nlohmann::json to_json(const PartsSpec& p);

// `j` is the stream's "plc"; `parts`: whether the stream has "parts" (the
// verdicts the PLC acts on). Throws FieldError naming the setting
// ("streams[0].plc.ejector-distance").
PlcSpec parse_plc_spec(const nlohmann::json& j, const std::string& field, const std::string& origin,
                       bool parts);

}  // namespace torchinfer::server
