// Figures the torchinfer element publishes: the read-only load/inference
// properties and the "stats" structure (property and periodic message).
#pragma once

#include <gst/gst.h>

#include <string>

#include "common/stream_stats.h"

namespace torchinfer::gst {

// Figures of the latest model load, published as read-only properties.
struct Stats {
  double load_ms = 0;  // read + optimise + warm-up
  double read_ms = 0, optimize_ms = 0, warmup_ms = 0;
  std::string active_precision;
  int active_lanes = 0;  // what `lanes` resolved to (lanes=0: the automatic count)
};

// The "stats" property / "torchinfer-stats" message structure.
GstStructure* stats_structure(const char* name, const StatsSnapshot& s);

}  // namespace torchinfer::gst
