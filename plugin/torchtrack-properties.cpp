// torchtrack's properties, each described once (rules in property-table.h).
#include "torchtrack-properties.h"

namespace torchinfer::gst::track {
namespace {

using Entry = Property<Settings, Status>;

GType tracking_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_TORCHTRACK_ZERO_TERM, "Detections on every frame: each frame's are taken as new",
       "zero-term"},
      {GST_TORCHTRACK_SHORT_TERM,
       "Frames not inferred (inference-interval) show each track's predicted box", "short-term"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchTrackTrackingType", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

// Writable before start, stored in Settings member M.
template <auto M>
constexpr Entry ready(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kReady, spec, set_member<M, Settings>, get_member<M, Settings, Status>};
}

// clang-format off
constexpr Entry kEntries[] = {
  ready<&Settings::type>(PROP_TRACKING_TYPE, [](GParamFlags f) {
    return g_param_spec_enum("tracking-type", "Tracking type",
      "zero-term: detections on every frame; short-term: frames torchinfer "
      "did not infer (inference-interval) show each track's predicted box",
      tracking_type(), GST_TORCHTRACK_SHORT_TERM, f); }),
  ready<&Settings::max_age>(PROP_MAX_AGE, [](GParamFlags f) {
    return g_param_spec_uint("max-age", "Max age",
      "A track survives this many frames with detections in a row without "
      "a match (an occlusion) and ends on the next; predicted frames do not "
      "count",
      0, 100000, kDefaultMaxAge, f); }),
  ready<&Settings::min_hits>(PROP_MIN_HITS, [](GParamFlags f) {
    return g_param_spec_uint("min-hits", "Min hits",
      "Detection frames in a row an object must be matched before it gets an id "
      "(predicted frames do not count)",
      1, 100000, kDefaultMinHits, f); }),
  ready<&Settings::iou>(PROP_IOU_THRESHOLD, [](GParamFlags f) {
    return g_param_spec_double("iou-threshold", "IoU threshold",
      "Least intersection-over-union between a track's predicted box and a "
      "detection for them to match (must be > 0)",
      0.0, 1.0, kDefaultIou, f); }),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchtrack", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_IOU_THRESHOLD, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

void install_properties(GObjectClass* klass) {
  kTable.install(klass);
  gst_type_mark_as_plugin_api(tracking_type(), static_cast<GstPluginAPIFlags>(0));
}

}  // namespace torchinfer::gst::track
