// The torchoverlay element's settings and properties. Each property is
// described once, in torchoverlay-properties.cpp (see property-table.h).
#pragma once

#include <gst/gst.h>

#include "property-table.h"

namespace torchinfer::gst::overlay {

enum Prop {
  PROP_0,
  PROP_SHOW_LABELS,
  PROP_SHOW_CONFIDENCE,
  PROP_SHOW_CLASSIFICATION,
  PROP_SHOW_HUD,
  PROP_SHOW_ANOMALY_MAP,
  PROP_ANOMALY_MAP_ALPHA,
  PROP_ANOMALY_MAP_NORMAL,
};

// All of them may change while playing: each frame reads them.
struct Settings {
  bool show_labels = true;
  bool show_confidence = true;
  bool show_classification = true;
  bool show_hud = false;
  // Anomaly results (torchinfer task=anomaly) only: nothing else has a map.
  bool show_anomaly_map = true;
  double anomaly_map_alpha = 0.4;
  bool anomaly_map_normal = false;  // also on results judged normal
};

// torchoverlay publishes no figures as properties.
struct Status {};

const PropertyTable<Settings, Status>& properties();

}  // namespace torchinfer::gst::overlay
