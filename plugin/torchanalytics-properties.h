// The torchanalytics element's settings and properties. Each property is
// described once, in torchanalytics-properties.cpp (see property-table.h).
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "property-table.h"

namespace torchinfer::gst::analytics {

enum Prop {
  PROP_0,
  PROP_LINES,
  PROP_ZONES,
  PROP_NORMALIZED,
  PROP_CONFIG,
  PROP_REFERENCE_POINT,
  PROP_HYSTERESIS,
  PROP_MAX_AGE,
  PROP_CLASSES,
  PROP_COUNTS,
};

constexpr double kDefaultHysteresis = 4;
constexpr guint kDefaultMaxAge = 30;

// Every property may change while PLAYING: the streaming thread picks the
// new settings up at the next frame (generation changes). lines/zones are
// parsed by their setter, so a bad value is refused and the old one stays;
// the config file is read by its setter while running and at start.
struct Settings {
  std::string lines_text, zones_text;
  std::vector<Tripwire> lines;
  std::vector<Zone> zones;
  std::string classes_text;
  std::vector<std::string> classes;  // of the lines and zones properties; empty = every label
  bool normalized = false;
  std::string config;              // path; empty = none
  AnalyticsConfig config_content;  // read while running; start reads it again
  ReferencePoint reference = ReferencePoint::kBottomCenter;
  double hysteresis = kDefaultHysteresis;
  guint max_age = kDefaultMaxAge;
  std::uint64_t generation = 0;  // bumped by every accepted change
  bool running = false;          // set by start/stop: the config file is read at once
};

// The latest counts of each stream (a copy of the structure of its latest
// frame's meta), for the read-only `counts` property: an application (the
// server) reads them without a pad probe.
struct CountsBoard {
  std::mutex lock;
  std::map<std::string, GstStructure*> latest;  // by stream-id, owned
  void put(const std::string& stream, const GstStructure* s);
  void clear();
  ~CountsBoard() { clear(); }
};

struct Status {
  CountsBoard* board = nullptr;
};

const PropertyTable<Settings, Status>& properties();

// Also marks the enum type as plugin API.
void install_properties(GObjectClass* klass);

// The lines and zones of the property strings and the config file together,
// in pixels of a width x height frame. Throws Error(kConfigInvalid) when a
// name is used by both.
AnalyticsConfig effective_config(const Settings& s, int width, int height);

}  // namespace torchinfer::gst::analytics
