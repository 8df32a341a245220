// The torchnms element's settings, live figures and properties. Each
// property is described once, in torchnms-properties.cpp (see
// property-table.h).
#pragma once

#include <gst/gst.h>

#include <optional>
#include <string>

#include "common/stream_stats.h"
#include "property-table.h"

namespace torchinfer::gst::nms {

enum Prop {
  PROP_0,
  PROP_DECODER,
  PROP_CONFIDENCE_THRESHOLD,
  PROP_IOU_THRESHOLD,
  PROP_MAX_DETECTIONS,
  PROP_CLASS_AGNOSTIC,
  PROP_LABELS,
  PROP_MODEL_CONFIG,
  PROP_DETECTIONS,
  PROP_STATS_INTERVAL,
  PROP_STATS,
  PROP_SUPPRESS_CONTAINED,
  PROP_MASK_THRESHOLD,
  PROP_MODEL_INSTANCE_ID,
};

// Property values; 0 = take it from the model's sidecar.
enum GstTorchNmsDecoder {
  GST_TORCHNMS_DECODER_AUTO,
  GST_TORCHNMS_DECODER_YOLOV5,
  GST_TORCHNMS_DECODER_YOLOV8,
  GST_TORCHNMS_DECODER_SSD,
  GST_TORCHNMS_DECODER_CLASSIFICATION,
  GST_TORCHNMS_DECODER_YOLOV8_SEG,
  GST_TORCHNMS_DECODER_YOLOV8_OBB,
};

constexpr double kDefaultConfidence = 0.25;
constexpr double kDefaultIou = 0.45;
constexpr guint kDefaultMaxDetections = 100;
// Measured on models/demo/line.mkv (docs/elements.md, torchnms).
constexpr double kDefaultSuppressContained = 0.9;
constexpr double kDefaultMaskThreshold = 0.5;

// Thresholds are optional: set ones override the sidecar, unset ones fall
// back to it, then to the defaults above. stats-interval applies at once,
// the others from the next start.
struct Settings {
  GstTorchNmsDecoder decoder = GST_TORCHNMS_DECODER_AUTO;
  std::optional<double> confidence, iou;
  std::optional<guint> max_detections;
  bool class_agnostic = false;
  std::string labels_file, model_config;
  guint stats_interval_ms = 0;
  double suppress_contained = kDefaultSuppressContained;  // 0: off
  std::optional<double> mask_threshold;                   // yolov8-seg
  // Decode only the full-frame result of the torchinfer with this
  // model-instance-id (two detectors on one frame); empty: the first one.
  std::string model_instance_id;
};

// The element's live figures, since start.
struct Status {
  guint64 detections = 0;
  guint64 frames = 0;     // frames decoded
  guint64 contained = 0;  // detections dropped as lying inside another (suppress-contained)
  guint64 invalid = 0;    // yolov8-obb: confident anchors with a non-finite or empty box/angle
  LatencyWindow decode_ms;
  // yolov8-seg: masks attached; of them, masks with no pixel set, with
  // every pixel of the box set, and with NaN/infinite values (empty).
  guint64 masks = 0, masks_empty = 0, masks_full = 0, masks_invalid = 0;
  guint64 masks_dropped = 0;  // detections left without a mask (kMaxMaskRunsPerFrame)
};

// The "stats" property / "torchnms-stats" message.
GstStructure* stats_structure(const Status& s);

const PropertyTable<Settings, Status>& properties();

// Also marks the decoder enum as plugin API (documented with the element).
void install_properties(GObjectClass* klass);

}  // namespace torchinfer::gst::nms
