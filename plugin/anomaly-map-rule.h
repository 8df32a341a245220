// The rule torchinfer decided an anomaly map's cells with, as its anomaly
// structure carries it (docs/anomaly.md): one reader for the overlay and the
// QA app. Header-only: the apps link the meta library, not the plugin's.
#pragma once

#include <gst/gst.h>

#include "decode/anomaly.h"

namespace torchinfer::gst {

inline MapRule map_rule(const GstStructure* s) {
  MapRule rule;
  gst_structure_get_double(s, "map_threshold", &rule.threshold);
  MinMaxNorm n;
  if (gst_structure_get_double(s, "map_norm_threshold", &n.threshold) &&
      gst_structure_get_double(s, "map_norm_min", &n.min) &&
      gst_structure_get_double(s, "map_norm_max", &n.max))
    rule.norm = n;
  return rule;
}

}  // namespace torchinfer::gst
