// JSON lines of the QA-line app: one per decided part, one summary at the end
// (format in pipelines/README.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "parts/core/part_verdicts.h"

namespace torchinfer {

// `files` (an object, e.g. the evidence files of a reject) joins "evidence".
// `codes` (QaRules::codes): the line has "code", {"format", "text"} or null.
std::string decision_json(const QaDecision& d,
                          const nlohmann::ordered_json& files = nlohmann::ordered_json(),
                          bool codes = false);

struct QaRunInfo {
  std::int64_t frames = 0, frames_inferred = 0;
  bool interrupted = false;  // stopped by a signal, not by the end of the stream
};
// The members of `extra` (an object, e.g. scores against a truth) come last.
std::string summary_json(const QaCounts& c, const QaRunInfo& run,
                         const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace torchinfer
