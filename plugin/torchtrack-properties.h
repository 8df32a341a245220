// The torchtrack element's settings and properties. Each property is
// described once, in torchtrack-properties.cpp (see property-table.h).
#pragma once

#include <gst/gst.h>

#include "property-table.h"

namespace torchinfer::gst::track {

enum Prop {
  PROP_0,
  PROP_TRACKING_TYPE,
  PROP_MAX_AGE,
  PROP_MIN_HITS,
  PROP_IOU_THRESHOLD,
};

enum TrackingType {
  GST_TORCHTRACK_ZERO_TERM,
  GST_TORCHTRACK_SHORT_TERM,
};

constexpr guint kDefaultMaxAge = 30;
constexpr guint kDefaultMinHits = 3;
constexpr double kDefaultIou = 0.3;

// All of them apply from the next start.
struct Settings {
  TrackingType type = GST_TORCHTRACK_SHORT_TERM;
  guint max_age = kDefaultMaxAge;
  guint min_hits = kDefaultMinHits;
  double iou = kDefaultIou;
};

// torchtrack publishes no figures as properties.
struct Status {};

const PropertyTable<Settings, Status>& properties();

// Also marks the enum type as plugin API (documented with the element).
void install_properties(GObjectClass* klass);

}  // namespace torchinfer::gst::track
