// torchcodes' properties, each described once (rules in property-table.h).
#include "torchcodes-properties.h"

#include "codes/code_reader.h"
#include "common/utf8.h"

namespace torchinfer::gst::codes {
namespace {

using Entry = Property<Settings, Status>;

GType full_frame_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_TORCHCODES_FULL_FRAME_NEVER, "Read only inside detection ROIs", "never"},
      {GST_TORCHCODES_FULL_FRAME_NO_ROI, "Read the whole frame when it has no detection ROI",
       "no-roi"},
      {GST_TORCHCODES_FULL_FRAME_ALWAYS, "Read the whole frame, ignoring ROIs", "always"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchCodesFullFrame", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

template <auto M>
constexpr Entry ready(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kReady, spec, set_member<M, Settings>, get_member<M, Settings, Status>};
}

template <auto M>
constexpr Entry figure(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kReadOnly, spec, nullptr, get_member<M, Settings, Status>};
}

// An unknown format name is refused here, naming it, rather than at start.
bool set_formats(Settings& s, const GValue* v, GParamSpec*) {
  const std::string f = from_value<std::string>(v);
  const std::string bad = check_code_formats(f);
  if (!bad.empty()) {
    g_warning("torchcodes: property 'formats' refused '%s': %s", printable(f).c_str(), bad.c_str());
    return false;
  }
  s.formats = f;
  return true;
}

// clang-format off
constexpr Entry kEntries[] = {
  {PROP_FORMATS, Access::kReady, [](GParamFlags f) {
     return g_param_spec_string("formats", "Formats",
       "Symbologies to read, zxing-cpp names separated by ',' '|' or ' ' (DataMatrix, QRCode, "
       "MicroQRCode, Aztec, PDF417, Code128, Code39, Code93, Codabar, EAN-8, EAN-13, UPC-A, "
       "UPC-E, ITF, DataBar); unset = all", nullptr, f); },
   set_formats, get_member<&Settings::formats, Settings, Status>},
  ready<&Settings::object_class>(PROP_OBJECT_CLASS, [](GParamFlags f) {
    return g_param_spec_string("object-class", "Object class",
      "Comma-separated labels of the detection ROIs to read inside; unset = every ROI",
      nullptr, f); }),
  ready<&Settings::padding>(PROP_PADDING, [](GParamFlags f) {
    return g_param_spec_double("padding", "Padding",
      "Added to each side of a ROI before reading, as a fraction of its width/height "
      "(clipped to the frame)", 0.0, 1.0, kDefaultPadding, f); }),
  ready<&Settings::reread_interval>(PROP_REREAD_INTERVAL, [](GParamFlags f) {
    return g_param_spec_uint("reread-interval", "Re-read interval",
      "Frames after a tracked object's code was read before it is read again; 0 = never "
      "(until then the known code rides on its ROI)", 0, G_MAXUINT, 0, f); }),
  ready<&Settings::try_harder>(PROP_TRY_HARDER, [](GParamFlags f) {
    return g_param_spec_boolean("try-harder", "Try harder",
      "zxing-cpp's slower, more thorough search", TRUE, f); }),
  ready<&Settings::try_rotate>(PROP_TRY_ROTATE, [](GParamFlags f) {
    return g_param_spec_boolean("try-rotate", "Try rotate",
      "Also read 1D codes turned by 90/270 degrees (2D codes read at any angle)", TRUE, f); }),
  ready<&Settings::try_invert>(PROP_TRY_INVERT, [](GParamFlags f) {
    return g_param_spec_boolean("try-invert", "Try invert",
      "When nothing is found, read the region again inverted (light-on-dark marks)",
      FALSE, f); }),
  ready<&Settings::full_frame>(PROP_FULL_FRAME, [](GParamFlags f) {
    return g_param_spec_enum("full-frame", "Full frame",
      "When to read the whole frame (results in the frame's \"codes\" meta)",
      full_frame_type(), GST_TORCHCODES_FULL_FRAME_NO_ROI, f); }),
  figure<&Status::read>(PROP_READ, [](GParamFlags f) {
    return g_param_spec_uint64("read", "Read", "Views (ROIs or whole frames) read with a code",
      0, G_MAXUINT64, 0, f); }),
  figure<&Status::failed>(PROP_FAILED, [](GParamFlags f) {
    return g_param_spec_uint64("failed", "Failed",
      "Views read without a code (none found, a region outside the frame, a reader error)",
      0, G_MAXUINT64, 0, f); }),
  figure<&Status::tried>(PROP_TRIED, [](GParamFlags f) {
    return g_param_spec_uint64("tried", "Tried", "Views read (read + failed)",
      0, G_MAXUINT64, 0, f); }),
  figure<&Status::skipped_known>(PROP_SKIPPED_KNOWN, [](GParamFlags f) {
    return g_param_spec_uint64("skipped-known", "Skipped (known)",
      "Views of tracked objects not read because their code was known", 0, G_MAXUINT64, 0,
      f); }),
  ready<&Settings::workers>(PROP_WORKERS, [](GParamFlags f) {
    return g_param_spec_uint("workers", "Workers",
      "Threads that read codes off the streaming thread (each view's area copied for them); "
      "0 = read on the streaming thread", 0, 64, 0, f); }),
  ready<&Settings::budget_ms>(PROP_BUDGET_MS, [](GParamFlags f) {
    return g_param_spec_double("budget-ms", "Budget (ms)",
      "With workers: the longest the streaming thread waits for a frame's reads; a read "
      "finishing later is late (a track's code is carried on its later views)",
      0.0, 10000.0, kDefaultBudgetMs, f); }),
  figure<&Status::late>(PROP_LATE, [](GParamFlags f) {
    return g_param_spec_uint64("late", "Late",
      "With workers: reads finished after their frame had gone (counted in read/failed too)",
      0, G_MAXUINT64, 0, f); }),
  figure<&Status::deferred>(PROP_DEFERRED, [](GParamFlags f) {
    return g_param_spec_uint64("deferred", "Deferred",
      "With workers: due views not read because the workers were full or the track's read "
      "was still running", 0, G_MAXUINT64, 0, f); }),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchcodes", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_DEFERRED, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

void install_properties(GObjectClass* klass) {
  kTable.install(klass);
  gst_type_mark_as_plugin_api(full_frame_type(), static_cast<GstPluginAPIFlags>(0));
}

}  // namespace torchinfer::gst::codes
