// JSON lines of the QA-line app: one per decided part, one summary at the end
// (format in pipelines/README.md).
#pragma once

#include <cstdint>
#include <string>

#include "qa/part_tracker.h"

namespace torchinfer {

std::string decision_json(const QaDecision& d, double defect_threshold);

struct QaRunInfo {
  std::int64_t frames = 0, frames_inferred = 0;
  bool interrupted = false;  // stopped by a signal, not by the end of the stream
};
std::string summary_json(const QaCounts& c, const QaRunInfo& run);

}  // namespace torchinfer
