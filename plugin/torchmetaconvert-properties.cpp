// torchmetaconvert's properties, each described once (rules in
// property-table.h).
#include "torchmetaconvert-properties.h"

#include "frame-record-reader.h"

namespace torchinfer::gst {

// Here, with the property tables (not in frame-record-reader.cpp): the
// tables are built into the property-table tests without the readers.
GParamSpec* mm_per_pixel_param_spec(GParamFlags flags) {
  return g_param_spec_double(
      "mm-per-pixel", "Millimetres per pixel",
      "Camera calibration: the size of one frame pixel in mm on the object plane; masks "
      "(torchnms decoder=yolov8-seg) then also get \"area_mm2\". 0 = not calibrated",
      0.0, 1e6, 0.0, flags);
}

}  // namespace torchinfer::gst

namespace torchinfer::gst::metaconvert {
namespace {

using Entry = Property<Settings, Status>;

// Stored in Settings member M.
template <auto M>
constexpr Entry setting(Prop id, Access access, Entry::MakeSpec spec) {
  return {id, access, spec, set_member<M, Settings>, get_member<M, Settings, Status>};
}

// clang-format off
constexpr Entry kEntries[] = {
  setting<&Settings::location>(PROP_LOCATION, Access::kReady, [](GParamFlags f) {
    return g_param_spec_string("location", "Location",
      "File to write JSON lines to (one object per frame); unset or \"-\" writes to stdout",
      nullptr, f); }),
  setting<&Settings::include_tensors>(PROP_INCLUDE_TENSORS, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_boolean("include-tensors", "Include tensors",
      "Also write the raw output tensor values", FALSE, f); }),
  setting<&Settings::max_tensor_elements>(PROP_MAX_TENSOR_ELEMENTS, Access::kPlaying,
    [](GParamFlags f) {
    return g_param_spec_uint("max-tensor-elements", "Max tensor elements",
      "Values written per tensor with include-tensors; longer tensors are cut and marked "
      "\"truncated\"",
      0, G_MAXUINT, 1024, f); }),
  {PROP_LINES, Access::kReadOnly, [](GParamFlags f) {
     return g_param_spec_uint64("lines", "Lines", "JSON lines written since start", 0,
       G_MAXUINT64, 0, f); },
   nullptr, get_member<&Status::lines, Settings, Status>},
  setting<&Settings::anomaly_regions>(PROP_ANOMALY_REGIONS, Access::kPlaying, [](GParamFlags f) {
    return g_param_spec_boolean("anomaly-regions", "Anomaly regions",
      "Also write the anomalous regions of anomaly results (task=anomaly): boxes in frame "
      "pixels around the connected areas of the anomaly map at or above its threshold, largest "
      "first (at most 32, with \"regions_total\" when there were more)", FALSE, f); }),
  setting<&Settings::mm_per_pixel>(PROP_MM_PER_PIXEL, Access::kPlaying, mm_per_pixel_param_spec),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchmetaconvert", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_MM_PER_PIXEL, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

}  // namespace torchinfer::gst::metaconvert
