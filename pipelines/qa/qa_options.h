// The QA-line app's command line (usage in pipelines/README.md): parsed and
// checked before anything runs; a bad one is exit status 2.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "qa/qa_gate.h"

namespace torchinfer::qa {

// --classifier none: judge from the detector's defect boxes.
constexpr const char* kNoClassifier = "none";

struct Options {
  std::string clip, device, source, model = "models/demo/parts_detector.pt", output;
  std::string classifier = "models/demo/defect_classifier.pt";
  std::string anomaly;  // --anomaly: an anomaly model on the part crops; empty: none
  // --segmenter: a full-frame segmentation model (yolov8-seg) whose defect
  // masks judge the parts (with --classifier none); empty: none.
  std::string segmenter;
  std::string part_classes, defect_classes, tracking_type = "short-term", truth, out_dir;
  std::string mqtt_host, mqtt_topic = "qa-line/decisions";
  bool anomaly_given = false;    // --anomaly was given (an empty path is refused)
  bool segmenter_given = false;  // --segmenter was given (an empty path is refused)
  bool mqtt = false;             // --mqtt-host was given (an empty host is refused)
  int mqtt_port = 1883;
  double defect_threshold = 0.5, part_threshold = 0.5;
  int inference_interval = 1;
  int reclassify_interval = 0;  // after parse_args: 1..1000, the inference interval if not given
  bool quiet = false;
  // --evidence DIR (pipelines/qa/qa_evidence.h): files of every reject.
  std::string evidence_dir, evidence_encoder = "jpeg";
  bool evidence = false;  // --evidence was given (an empty folder is refused)
  double evidence_pre_s = 2, evidence_post_s = 1;
  long long evidence_max_events = 1000, evidence_max_bytes = 1ll << 30;
  std::optional<Gate> gate;  // --gate: parts are decided when they cross it
  // --codes: torchcodes reads each part's code (decision line "code");
  // --require-code (implies --codes): a judged part without one is rejected.
  bool codes = false, require_code = false;
  // --max-defect-area-mm2 (NaN: not given) with --mm-per-pixel (0: not given).
  double max_defect_area_mm2 = std::nan("");
  double mm_per_pixel = 0;
  // --defect-area-views: a class's area over the part's views, "max" or "median".
  std::string defect_area_views = "max";

  bool has_classifier() const { return classifier != kNoClassifier; }
  bool has_anomaly() const { return !anomaly.empty(); }
  bool has_segmenter() const { return !segmenter.empty(); }
  bool has_defect_area_limit() const { return !std::isnan(max_defect_area_mm2); }
  // --anomaly with --classifier none: the anomaly model alone judges (the
  // detector's defect boxes are not used).
  bool supervised() const { return has_classifier() || has_segmenter() || !has_anomaly(); }
};

// False, after printing why, for a command line that cannot run.
bool parse_args(int argc, char** argv, Options& o);

}  // namespace torchinfer::qa
