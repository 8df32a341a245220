// torchoverlay's properties, each described once (rules in property-table.h).
#include "torchoverlay-properties.h"

namespace torchinfer::gst::overlay {
namespace {

using Entry = Property<Settings, Status>;

// Changeable while playing, stored in Settings member M.
template <auto M>
constexpr Entry playing(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kPlaying, spec, set_member<M, Settings>, get_member<M, Settings, Status>};
}

// clang-format off
constexpr Entry kEntries[] = {
  playing<&Settings::show_labels>(PROP_SHOW_LABELS, [](GParamFlags f) {
    return g_param_spec_boolean("show-labels", "Show labels",
      "Write each detection's label on its box", TRUE, f); }),
  playing<&Settings::show_confidence>(PROP_SHOW_CONFIDENCE, [](GParamFlags f) {
    return g_param_spec_boolean("show-confidence", "Show confidence",
      "Write each result's confidence (0..1) beside its label", TRUE, f); }),
  playing<&Settings::show_classification>(PROP_SHOW_CLASSIFICATION, [](GParamFlags f) {
    return g_param_spec_boolean("show-classification", "Show classification",
      "Write the frame's top-1 classification in the top-left corner", TRUE, f); }),
  playing<&Settings::show_hud>(PROP_SHOW_HUD, [](GParamFlags f) {
    return g_param_spec_boolean("show-hud", "Show HUD",
      "Add a line with the measured frame rate at this element and the "
      "frame's preprocessing and inference time",
      FALSE, f); }),
  playing<&Settings::show_anomaly_map>(PROP_SHOW_ANOMALY_MAP, [](GParamFlags f) {
    return g_param_spec_boolean("show-anomaly-map", "Show anomaly map",
      "Anomaly results (torchinfer task=anomaly): blend the anomaly map as a colour map (blue "
      "normal .. red anomalous) onto the frame or the part's box, and outline its anomalous "
      "areas. Results of other models have no map: nothing is drawn for them",
      TRUE, f); }),
  playing<&Settings::anomaly_map_alpha>(PROP_ANOMALY_MAP_ALPHA, [](GParamFlags f) {
    return g_param_spec_double("anomaly-map-alpha", "Anomaly map alpha",
      "Weight of the colour map over the video (0 = invisible, 1 = opaque)", 0.0, 1.0, 0.4,
      f); }),
  playing<&Settings::anomaly_map_normal>(PROP_ANOMALY_MAP_NORMAL, [](GParamFlags f) {
    return g_param_spec_boolean("anomaly-map-normal", "Anomaly map on normal results",
      "Also draw the maps of results judged normal (default: only anomalous ones)", FALSE,
      f); }),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchoverlay", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_ANOMALY_MAP_NORMAL, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

}  // namespace torchinfer::gst::overlay
