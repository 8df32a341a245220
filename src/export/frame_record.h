// Everything torchmetaconvert writes about one frame, free of GStreamer types,
// and its serialisation as one line of JSON (the analytics contract).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "decode/anomaly.h"
#include "decode/classification.h"
#include "decode/detection.h"
#include "decode/yolov8_seg.h"

#include "analytics/analytics.h"  // torchanalytics' counts and events

namespace torchinfer {

// One classifier's result on a detection (torchinfer inference-region=roi-list).
struct RegionClassificationRecord {
  std::string label;
  int label_id = 0;
  double confidence = 0;
  std::string model, model_instance_id, element;
  bool inferred = true;  // false: reused from an earlier frame (reclassify-interval)
};

// An anomaly model's result (task "anomaly") on the frame or a detection;
// regions (frame pixels) only when the exporter was asked for them.
struct AnomalyRecord {
  double score = 0, raw_score = 0;
  bool anomalous = false;
  std::optional<std::vector<AnomalyRegion>> regions;
};

// At most this many regions per result are written, largest first; a
// result with more says how many it had ("regions_total").
constexpr std::size_t kMaxAnomalyRegionsWritten = 32;

// A code torchcodes read (DataMatrix, QR, 1D): zxing-cpp's format name, its
// text, and the symbol's box in frame pixels.
struct CodeRecord {
  std::string format, text;
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;
};

// A detection as written: box in frame pixels (Detection's fields) and the
// same box normalised to 0..1 of the frame; the track id when a tracker
// (torchtrack) gave it one; the classifications of the region.
struct DetectionRecord {
  Detection box;
  double nx_min = 0, ny_min = 0, nx_max = 0, ny_max = 0;
  std::optional<int> object_id;                   // absent: not tracked (written only when set)
  std::optional<std::vector<std::string>> zones;  // torchanalytics: zones it is in (when set)
  bool predicted = false;                         // the tracker's predicted box, not a detection
  std::vector<RegionClassificationRecord> classification;  // written only when not empty
  std::optional<AnomalyRecord> anomaly;                    // written only when set
  std::optional<CodeRecord> code;                          // torchcodes; written only when set
  std::optional<Mask> mask;  // torchnms yolov8-seg; written only when set
};

// torchanalytics' counts of the frame's stream so far, and the crossings,
// entries and exits of this frame (its meta and element messages).
struct AnalyticsRecord {
  std::vector<LineCounts> lines;
  std::vector<ZoneCounts> zones;
  std::vector<AnalyticsEvent> events;
};

// A track starting or ending on this frame (torchtrack's
// torchtrack-track-started / -ended structures).
struct TrackEventRecord {
  bool ended = false;  // false: started
  int id = 0;
  std::string label;
  int label_id = 0;
  std::optional<std::int64_t> pts_ns;
  std::string stream_id;
  int age = 0;
  std::string reason;                            // ended only
  std::optional<std::int64_t> last_seen_pts_ns;  // ended only
};

struct FrameRecord {
  std::uint64_t frame_number = 0;
  std::optional<std::int64_t> pts_ns, dts_ns, duration_ns;  // absent = GST_CLOCK_TIME_NONE
  std::string stream_id;
  int width = 0, height = 0;

  bool has_inference = false;  // false: no tensor meta on this buffer
  std::string model;
  int input_width = 0, input_height = 0;
  double inference_ms = 0;
  double preprocess_ms = 0;
  double queue_ms = 0;
  int batch_size = 1, batch_index = 0;
  bool inferred = true;                       // false: the result was reused from an earlier frame
  std::optional<std::int64_t> result_pts_ns;  // of that earlier frame
  std::string skip;   // not inferred: why ("interval", "still", ...); "" = not said
  bool valid = true;  // false: the outputs held NaN/infinity (written only then)
  std::vector<ClassResult> classification;
  std::optional<AnomalyRecord> anomaly;        // written only when set
  std::vector<DetectionRecord> detections;     // written when has_inference or not empty
  std::vector<TensorView> tensors;             // written only when asked for
  std::vector<TrackEventRecord> track_events;  // written only when not empty
  std::optional<AnalyticsRecord> analytics;    // written when set (torchanalytics upstream)
  // torchcodes read the whole frame: what it found (written when set).
  std::optional<std::vector<CodeRecord>> codes;
  // Millimetres per frame pixel (torchmetaconvert mm-per-pixel): masks also
  // get "area_mm2" when set.
  std::optional<double> mm_per_pixel;
};

// One JSON object, no trailing newline. Tensors longer than
// max_tensor_elements are cut and marked "truncated": true.
std::string to_json_line(const FrameRecord& r, bool include_tensors,
                         std::size_t max_tensor_elements);

}  // namespace torchinfer
