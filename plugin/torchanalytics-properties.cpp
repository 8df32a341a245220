// torchanalytics' properties, each described once (rules in property-table.h).
#include "torchanalytics-properties.h"

#include <set>

#include "common/error.h"

namespace torchinfer::gst::analytics {
namespace {

using Entry = Property<Settings, Status>;

GType reference_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {static_cast<gint>(ReferencePoint::kBottomCenter), "Middle of the box's bottom edge",
       "bottom-center"},
      {static_cast<gint>(ReferencePoint::kCenter), "Centre of the box", "center"},
      {static_cast<gint>(ReferencePoint::kTopCenter), "Middle of the box's top edge", "top-center"},
      {static_cast<gint>(ReferencePoint::kLeftCenter), "Middle of the box's left edge",
       "left-center"},
      {static_cast<gint>(ReferencePoint::kRightCenter), "Middle of the box's right edge",
       "right-center"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchAnalyticsReferencePoint", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

bool refuse(GParamSpec* pspec, const char* value, const std::string& why) {
  g_warning("torchanalytics: refused %s=\"%s\": %s; the previous value stays",
            g_param_spec_get_name(pspec), value ? value : "", why.c_str());
  return false;
}

template <auto Text, auto Parsed, auto Parse>
bool set_geometry(Settings& s, const GValue* v, GParamSpec* pspec) {
  const char* text = g_value_get_string(v);
  try {
    s.*Parsed = Parse(text ? text : "");
  } catch (const Error& e) {
    return refuse(pspec, text, e.what());
  }
  s.*Text = text ? text : "";
  s.generation++;
  return true;
}

bool set_classes(Settings& s, const GValue* v, GParamSpec* pspec) {
  const char* text = g_value_get_string(v);
  try {
    s.classes = parse_classes(text ? text : "");
  } catch (const Error& e) {
    return refuse(pspec, text, e.what());
  }
  s.classes_text = text ? text : "";
  s.generation++;
  return true;
}

bool set_config(Settings& s, const GValue* v, GParamSpec* pspec) {
  const char* path = g_value_get_string(v);
  AnalyticsConfig content;
  if (s.running && path && *path) {
    try {
      content = read_analytics_file(path);
    } catch (const Error& e) {
      return refuse(pspec, path, e.what());
    }
  }
  s.config = path ? path : "";
  s.config_content = std::move(content);
  s.generation++;
  return true;
}

// Writable at any time, stored in member M; the streaming thread notices.
template <auto M>
bool set_live(Settings& s, const GValue* v, GParamSpec* pspec) {
  set_member<M, Settings>(s, v, pspec);
  s.generation++;
  return true;
}

template <auto M>
constexpr Entry live(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kPlaying, spec, set_live<M>, get_member<M, Settings, Status>};
}

// "torchanalytics-counts" with "streams": one "torchanalytics" structure
// (as on the frames' meta, without "events") per stream seen since start.
void get_counts(const Settings&, const Status& now, GValue* v) {
  GstStructure* s = gst_structure_new_empty("torchanalytics-counts");
  GValue streams = G_VALUE_INIT, one = G_VALUE_INIT;
  gst_value_array_init(&streams, 0);
  if (now.board) {
    std::lock_guard<std::mutex> lock(now.board->lock);
    for (const auto& [id, c] : now.board->latest) {
      g_value_init(&one, GST_TYPE_STRUCTURE);
      gst_value_set_structure(&one, c);
      gst_value_array_append_and_take_value(&streams, &one);
    }
  }
  gst_structure_take_value(s, "streams", &streams);
  g_value_take_boxed(v, s);
}

// clang-format off
constexpr Entry kEntries[] = {
  {PROP_LINES, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_string("lines", "Lines",
      "Tripwires name:x1,y1,x2,y2[;name2:...] (frame pixels, or 0..1 with normalized); "
      "crossing from the left to the right of P1->P2 is forward",
      nullptr, f); },
    set_geometry<&Settings::lines_text, &Settings::lines, parse_lines>,
    get_member<&Settings::lines_text, Settings, Status>},
  {PROP_ZONES, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_string("zones", "Zones",
      "Polygons name:x1,y1,x2,y2,x3,y3[,...][;name2:...] (frame pixels, or 0..1 with "
      "normalized); the border belongs to the zone",
      nullptr, f); },
    set_geometry<&Settings::zones_text, &Settings::zones, parse_zones>,
    get_member<&Settings::zones_text, Settings, Status>},
  live<&Settings::normalized>(PROP_NORMALIZED, [](GParamFlags f) {
    return g_param_spec_boolean("normalized", "Normalized",
      "lines and zones are in 0..1 of the frame width and height (the config "
      "file says so itself)", FALSE, f); }),
  {PROP_CONFIG, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_string("config", "Config file",
      "JSON file of lines and zones with class filters and zone holes (see "
      "docs/elements.md); added to the lines and zones properties",
      nullptr, f); },
    set_config, get_member<&Settings::config, Settings, Status>},
  live<&Settings::reference>(PROP_REFERENCE_POINT, [](GParamFlags f) {
    return g_param_spec_enum("reference-point", "Reference point",
      "The point of an object's box that crosses lines and is in zones",
      reference_type(), static_cast<gint>(ReferencePoint::kBottomCenter), f); }),
  live<&Settings::hysteresis>(PROP_HYSTERESIS, [](GParamFlags f) {
    return g_param_spec_double("hysteresis", "Hysteresis",
      "Pixels an object's reference point must be past a line (or outside a "
      "zone) for it to have changed side (left); jitter within counts nothing",
      0.0, 10000.0, kDefaultHysteresis, f); }),
  live<&Settings::max_age>(PROP_MAX_AGE, [](GParamFlags f) {
    return g_param_spec_uint("max-age", "Max age",
      "Frames a track's state (sides, zones, what it was counted for) is kept "
      "after its last sighting: a track re-found within them does not count again",
      0, 100000, kDefaultMaxAge, f); }),
  {PROP_CLASSES, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_string("classes", "Classes",
      "Labels (comma-separated) that the lines and zones of the lines and zones "
      "properties count, e.g. bracket,washer; empty: every label (the config file's "
      "entries have their own)",
      nullptr, f); },
    set_classes, get_member<&Settings::classes_text, Settings, Status>},
  {PROP_COUNTS, Access::kReadOnly, [](GParamFlags f) {
    return g_param_spec_boxed("counts", "Counts",
      "torchanalytics-counts: \"streams\", the latest counts of each stream since start "
      "(lines and zones as on the frames' meta)",
      GST_TYPE_STRUCTURE, f); },
    nullptr, get_counts},
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchanalytics", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_COUNTS, "every Prop has an entry");

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from, const char* what) {
  std::set<std::string> names;
  for (const T& t : to) names.insert(t.name);
  for (const T& t : from) {
    if (names.count(t.name))
      throw Error(ErrorKind::kConfigInvalid, std::string(what) + ": the name '" + t.name +
                                                 "' is in both the property and the config file");
    to.push_back(t);
  }
}

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

void install_properties(GObjectClass* klass) {
  kTable.install(klass);
  gst_type_mark_as_plugin_api(reference_type(), static_cast<GstPluginAPIFlags>(0));
}

void CountsBoard::put(const std::string& stream, const GstStructure* s) {
  GstStructure* copy = gst_structure_copy(s);
  gst_structure_remove_field(copy, "events");  // this frame's only
  std::lock_guard<std::mutex> l(lock);
  GstStructure*& slot = latest[stream];
  if (slot) gst_structure_free(slot);
  slot = copy;
}

void CountsBoard::clear() {
  std::lock_guard<std::mutex> l(lock);
  for (auto& [id, s] : latest) gst_structure_free(s);
  latest.clear();
}

AnalyticsConfig effective_config(const Settings& s, int width, int height) {
  AnalyticsConfig props;
  props.lines = s.lines;
  props.zones = s.zones;
  for (Tripwire& l : props.lines) l.classes = s.classes;
  for (Zone& z : props.zones) z.classes = s.classes;
  props.normalized = s.normalized;
  AnalyticsConfig out = to_pixels(props, width, height);
  const AnalyticsConfig file = to_pixels(s.config_content, width, height);
  append(out.lines, file.lines, "lines");
  append(out.zones, file.zones, "zones");
  return out;
}

}  // namespace torchinfer::gst::analytics
