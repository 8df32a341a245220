// Anomaly models (anomalib's PaDiM, PatchCore, EfficientAD, ...): finding
// the map and the score among a frame's outputs, anomalib's min-max
// normalisation and decision, and the anomalous regions of the map.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/tensor.h"

namespace torchinfer {

// anomalib's normalize(): clamp((raw - threshold) / (max - min) + 0.5, 0, 1).
double normalize_min_max(double raw, const MinMaxNorm& n);

// The outputs of one frame that an anomaly model produced: the map
// ([1,1,h,w] or [1,h,w] float, more than one cell) and/or the score ([1] or
// [1,1] float). A dict's "anomaly_map" / "pred_score" win; otherwise the
// first tensor of each shape. Integer and bool outputs (anomalib 2's
// pred_label, pred_mask) are not looked at.
struct AnomalyOutputs {
  const TensorView* map = nullptr;
  const TensorView* score = nullptr;
};
AnomalyOutputs find_anomaly_outputs(const std::vector<TensorView>& views);

struct AnomalyResult {
  double score = 0;      // normalised to 0..1, or the raw score without thresholds
  double raw_score = 0;  // what the model said (a map alone: its maximum)
  bool anomalous = false;
  bool normalized = false;
  double threshold = 0.5;  // the decision: anomalous iff score >= threshold
  std::string map_name;    // the tensor holding the map, "" if none
};

// The decision threshold in score units: 1 - sensitivity (0.5 unset) when
// normalised, the raw threshold otherwise.
double anomaly_decision_threshold(const AnomalyConfig& cfg);

// nullopt when the outputs hold neither a map nor a score.
std::optional<AnomalyResult> decode_anomaly(const std::vector<TensorView>& views,
                                            const AnomalyConfig& cfg);

// How the map's values become the decision's units: normalised with `norm`
// when set (the map's own thresholds, or the score's for a map-only model),
// else taken as they are. Cells >= threshold are anomalous.
struct MapRule {
  std::optional<MinMaxNorm> norm;
  double threshold = 0.5;
};
MapRule anomaly_map_rule(const AnomalyConfig& cfg);

// Model input -> frame: frame = (model - offset) / scale, then clipped to
// the clip box (the frame, or a part's ROI).
struct MapPlacement {
  int input_width = 0, input_height = 0;
  double scale_x = 1, scale_y = 1, offset_x = 0, offset_y = 0;
  double clip_x0 = 0, clip_y0 = 0, clip_x1 = 0, clip_y1 = 0;
};

struct AnomalyRegion {
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;  // frame pixels
  double peak = 0;                                    // highest cell, decision units
  int cells = 0;                                      // map cells in the region
};

// Connected areas (8-neighbour) of anomalous map cells as boxes in frame
// pixels, largest first (ties: in the map's raster order). NaN cells count
// as normal (a NaN map is an invalid result and never gets here).
std::vector<AnomalyRegion> anomaly_regions(const TensorView& map, const MapRule& rule,
                                           const MapPlacement& where);

}  // namespace torchinfer
