// torchnms' properties, each described once (rules in property-table.h).
#include "torchnms-properties.h"

namespace torchinfer::gst::nms {
namespace {

using Entry = Property<Settings, Status>;

GType decoder_type() {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_TORCHNMS_DECODER_AUTO, "The sidecar's \"decoder\" (classification for classifiers)",
       "auto"},
      {GST_TORCHNMS_DECODER_YOLOV5, "YOLOv5 [1, A, 5+C]: cx, cy, w, h, objectness, classes",
       "yolov5"},
      {GST_TORCHNMS_DECODER_YOLOV8, "YOLOv8 [1, 4+C, A]: cx, cy, w, h, classes", "yolov8"},
      {GST_TORCHNMS_DECODER_SSD, "SSD: boxes [1, A, 4] normalised corners, scores [1, A, C]",
       "ssd"},
      {GST_TORCHNMS_DECODER_CLASSIFICATION, "Classification: top-k labels, no boxes",
       "classification"},
      {GST_TORCHNMS_DECODER_YOLOV8_SEG,
       "YOLOv8-seg [1, 4+C+M, A] and prototypes [1, M, h, w]: yolov8 boxes with masks",
       "yolov8-seg"},
      {GST_TORCHNMS_DECODER_YOLOV8_OBB,
       "YOLOv8-obb [1, 4+C+1, A]: cx, cy, w, h, classes, angle (radians); rotated boxes",
       "yolov8-obb"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstTorchNmsDecoder", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

// Writable before start, stored in Settings member M.
template <auto M>
constexpr Entry ready(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kReady, spec, set_member<M, Settings>, get_member<M, Settings, Status>};
}

// An optional override in Settings member M: unset reads back kDefault,
// the value the element falls back to without a sidecar.
template <auto M, const auto& kDefault>
void get_or_default(const Settings& s, const Status&, GValue* v) {
  to_value(v, (s.*M).value_or(kDefault));
}

template <auto M, const auto& kDefault>
constexpr Entry override(Prop id, Entry::MakeSpec spec) {
  return {id, Access::kReady, spec, set_member<M, Settings>, get_or_default<M, kDefault>};
}

void get_stats(const Settings&, const Status& now, GValue* v) {
  g_value_take_boxed(v, stats_structure(now));
}

// clang-format off
constexpr Entry kEntries[] = {
  ready<&Settings::decoder>(PROP_DECODER, [](GParamFlags f) {
    return g_param_spec_enum("decoder", "Decoder",
      "Layout of the model output; auto = the sidecar's \"decoder\" "
      "(classification for a classifier's sidecar)",
      decoder_type(), GST_TORCHNMS_DECODER_AUTO, f); }),
  override<&Settings::confidence, kDefaultConfidence>(PROP_CONFIDENCE_THRESHOLD, [](GParamFlags f) {
    return g_param_spec_double("confidence-threshold", "Confidence threshold",
      "Keep detections scoring at least this (YOLOv5: objectness x class "
      "score); unset = sidecar's confidence_threshold, else 0.25",
      0.0, 1.0, kDefaultConfidence, f); }),
  override<&Settings::iou, kDefaultIou>(PROP_IOU_THRESHOLD, [](GParamFlags f) {
    return g_param_spec_double("iou-threshold", "IoU threshold",
      "NMS drops a box overlapping a better one by more than this "
      "intersection-over-union; unset = sidecar's iou_threshold, else 0.45",
      0.0, 1.0, kDefaultIou, f); }),
  override<&Settings::max_detections, kDefaultMaxDetections>(PROP_MAX_DETECTIONS,
    [](GParamFlags f) {
    return g_param_spec_uint("max-detections", "Max detections",
      "Most detections per frame (the most confident); unset = sidecar's "
      "max_detections, else 100",
      1, 100000, kDefaultMaxDetections, f); }),
  ready<&Settings::class_agnostic>(PROP_CLASS_AGNOSTIC, [](GParamFlags f) {
    return g_param_spec_boolean("class-agnostic", "Class-agnostic NMS",
      "Suppress overlapping boxes whatever their class (default: only "
      "boxes of the same class suppress each other)",
      FALSE, f); }),
  ready<&Settings::labels_file>(PROP_LABELS, [](GParamFlags f) {
    return g_param_spec_string("labels", "Labels file",
      "Text file with one label per line (line n = class id n); overrides "
      "the sidecar's labels",
      nullptr, f); }),
  ready<&Settings::model_config>(PROP_MODEL_CONFIG, [](GParamFlags f) {
    return g_param_spec_string("model-config", "Model config",
      "JSON sidecar with decoder, thresholds and labels; unset = the one "
      "beside the model named in the tensor meta (<model>.json)",
      nullptr, f); }),
  {PROP_DETECTIONS, Access::kReadOnly, [](GParamFlags f) {
     return g_param_spec_uint64("detections", "Detections", "Detections attached since start", 0,
       G_MAXUINT64, 0, f); },
   nullptr, get_member<&Status::detections, Settings, Status>},
  {PROP_STATS_INTERVAL, Access::kPlaying, [](GParamFlags f) {
     return g_param_spec_uint("stats-interval", "Stats interval",
       "Post a \"torchnms-stats\" element message every this many ms (and one "
       "at EOS); 0 = never",
       0, G_MAXUINT, 0, f); },
   set_member<&Settings::stats_interval_ms, Settings>,
   get_member<&Settings::stats_interval_ms, Settings, Status>},
  {PROP_STATS, Access::kReadOnly, [](GParamFlags f) {
     return g_param_spec_boxed("stats", "Statistics",
       "torchnms-stats: frames decoded, detections, decode-ms-p50/p95/p99 "
       "(decode + NMS per frame, over the latest 1024 frames); yolov8-seg: masks, "
       "masks-empty, masks-full, masks-invalid, masks-dropped; invalid (yolov8-obb "
       "candidates dropped for a non-finite or empty box or angle)",
       GST_TYPE_STRUCTURE, f); },
   nullptr, get_stats},
  ready<&Settings::suppress_contained>(PROP_SUPPRESS_CONTAINED, [](GParamFlags f) {
    return g_param_spec_double("suppress-contained", "Suppress contained",
      "Drop a box of which at least this fraction lies inside a bigger box of the same class "
      "(a detector's box of part of an object inside the box of the whole); 0 = off",
      0.0, 1.0, kDefaultSuppressContained, f); }),
  override<&Settings::mask_threshold, kDefaultMaskThreshold>(PROP_MASK_THRESHOLD, [](GParamFlags f) {
    return g_param_spec_double("mask-threshold", "Mask threshold",
      "decoder yolov8-seg: a frame pixel of a detection's box is in its mask when the sigmoid "
      "of its mask value is above this; unset = sidecar's mask_threshold, else 0.5",
      0.0, 1.0, kDefaultMaskThreshold, f); }),
  ready<&Settings::model_instance_id>(PROP_MODEL_INSTANCE_ID, [](GParamFlags f) {
    return g_param_spec_string("model-instance-id", "Model instance id",
      "Decode only the full-frame result of the torchinfer with this model-instance-id (two "
      "full-frame models on one stream, each with its torchnms); unset = the first full-frame "
      "result on the buffer",
      nullptr, f); }),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchnms", kEntries};
static_assert(kTable.in_id_order(), "kEntries lists every Prop once, in id order");
static_assert(kTable.size() == PROP_MODEL_INSTANCE_ID, "every Prop has an entry");

}  // namespace

GstStructure* stats_structure(const Status& s) {
  GstStructure* st = gst_structure_new(
      "torchnms-stats", "frames", G_TYPE_UINT64, s.frames, "detections", G_TYPE_UINT64,
      s.detections, "contained", G_TYPE_UINT64, s.contained, "decode-ms-p50", G_TYPE_DOUBLE,
      s.decode_ms.percentile(50), "decode-ms-p95", G_TYPE_DOUBLE, s.decode_ms.percentile(95),
      "decode-ms-p99", G_TYPE_DOUBLE, s.decode_ms.percentile(99), nullptr);
  gst_structure_set(st, "masks", G_TYPE_UINT64, s.masks, "masks-empty", G_TYPE_UINT64,
                    s.masks_empty, "masks-full", G_TYPE_UINT64, s.masks_full, "masks-invalid",
                    G_TYPE_UINT64, s.masks_invalid, "masks-dropped", G_TYPE_UINT64, s.masks_dropped,
                    "invalid", G_TYPE_UINT64, s.invalid, nullptr);
  return st;
}

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

void install_properties(GObjectClass* klass) {
  kTable.install(klass);
  gst_type_mark_as_plugin_api(decoder_type(), static_cast<GstPluginAPIFlags>(0));
}

}  // namespace torchinfer::gst::nms
