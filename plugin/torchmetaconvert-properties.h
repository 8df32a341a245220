// The torchmetaconvert element's settings and properties. Each property is
// described once, in torchmetaconvert-properties.cpp (see property-table.h).
#pragma once

#include <gst/gst.h>

#include <string>

#include "property-table.h"

namespace torchinfer::gst::metaconvert {

enum Prop {
  PROP_0,
  PROP_LOCATION,
  PROP_INCLUDE_TENSORS,
  PROP_MAX_TENSOR_ELEMENTS,
  PROP_LINES,
  PROP_ANOMALY_REGIONS,
  PROP_MM_PER_PIXEL,
};

// location applies from the next start; the others from the next frame.
struct Settings {
  std::string location;
  bool include_tensors = false;
  guint max_tensor_elements = 1024;
  bool anomaly_regions = false;
  double mm_per_pixel = 0;  // 0: not calibrated
};

// The element's live counters.
struct Status {
  guint64 lines = 0;  // JSON lines written since start
};

const PropertyTable<Settings, Status>& properties();

}  // namespace torchinfer::gst::metaconvert
