// Reads what the QA line needs from one frame leaving the two-stage
// pipeline (torchinfer detector -> torchnms -> torchtrack -> torchinfer
// classifier on the part ROIs): the tracked parts with the classifier's (or
// the detector's) evidence, the tracks that ended, and the boxes for scoring.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

// The model-instance-ids the app gives its two torchinfer elements: results
// are told apart by them.
constexpr const char* kDetectorId = "qa-detector";
constexpr const char* kClassifierElement = "classify";
constexpr const char* kCodesElement = "codes";
// --segmenter: its torchinfer's and torchnms' model-instance-id.
constexpr const char* kSegmenterId = "qa-seg";

struct ScoredBox {
  long long id = -1;  // torchtrack's object id, -1 if not (yet) tracked
  std::string label;
  double confidence = 0;
  Box box;
  bool predicted = false;  // torchtrack's predicted box (short-term)
};

struct FrameResults {
  QaFrame frame;                   // parts with evidence, ended tracks
  std::vector<ScoredBox> boxes;    // every detection ROI, best first
  bool has_detector = false;       // the detector's tensor meta is there
  bool detector_inferred = false;  // its result is this frame's own
  double detector_ms = 0;          // its forward() time (inferred frames)
  // Results of this frame with NaN/infinite outputs (torchinfer's valid =
  // FALSE: they judge nothing), by model: "detector", "classifier",
  // "anomaly" (one per part view in region mode), "segmenter".
  std::map<std::string, std::int64_t> invalid;
};

// Exit status of a run where every part was decided and every line
// written, but some model results were invalid (NaN/infinite outputs): the
// parts they should have judged lost that evidence (pipelines/README.md).
constexpr int kInvalidResultsExit = 4;

struct ReadRules {
  // The detector's model-instance-id (torchinfer-server: the model's id).
  std::string detector_id = kDetectorId;
  std::vector<std::string> part_classes;
  double part_threshold = 0.5;
  bool classifier = true;     // evidence from the classifier
  bool defect_boxes = false;  // evidence from the detector's defect boxes
  bool anomaly = false;       // the anomaly model's results on the parts
  // Reads a part's anomaly view (the QA app: read_anomaly_view, which needs
  // the core's decoder); null: no anomaly model, nothing read.
  std::optional<QaAnomalyView> (*anomaly_view)(GstBuffer*, GstVideoRegionOfInterestMeta*) = nullptr;
  bool codes = false;       // torchcodes' code on the parts' ROIs
  double mm_per_pixel = 0;  // > 0: defect boxes' mask areas in mm² (QaDefectBox::area_mm2)
  // --segmenter: the defect boxes are the segmenter's (its torchnms names
  // kSegmenterId in their detection param), on frames it inferred; the
  // detector's own defect boxes are not used.
  bool segmenter = false;
};

// `index` is the frame's number in the stream. The frame size comes from
// the detector's tensor meta; without it the frame has no parts.
FrameResults read_frame(GstBuffer* buf, std::int64_t index, const ReadRules& rules);

}  // namespace torchinfer::qa
