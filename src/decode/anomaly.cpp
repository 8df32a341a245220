#include "decode/anomaly.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "common/error.h"

namespace torchinfer {
namespace {

bool is_float(const TensorView& t) {
  return t.data && (t.dtype == DType::kFloat32 || t.dtype == DType::kFloat64);
}

// [1,1,h,w], or [1,h,w] (anomalib 2's InferenceBatch may drop the channel);
// [1,1,1,1] too: a 1x1 map (a model pooled to one cell), whose one cell is
// also its score.
bool is_map(const TensorView& t) {
  const std::size_t n = t.dims.size();
  return is_float(t) && (n == 4 || n == 3) && t.dims[0] == 1 && (n == 3 || t.dims[1] == 1) &&
         t.dims[n - 2] >= 1 && t.dims[n - 1] >= 1;
}

bool is_score(const TensorView& t) {
  return is_float(t) && !t.dims.empty() && t.dims.size() <= 2 && t.elements() == 1;
}

double value_at(const TensorView& t, std::size_t i) {
  return t.dtype == DType::kFloat32 ? static_cast<const float*>(t.data)[i]
                                    : static_cast<const double*>(t.data)[i];
}

double map_max(const TensorView& t) {
  double mx = -INFINITY;
  for (std::size_t i = 0, n = t.elements(); i < n; ++i) mx = std::max(mx, value_at(t, i));
  return mx;
}

}  // namespace

double normalize_min_max(double raw, const MinMaxNorm& n) {
  const double v = (raw - n.threshold) / (n.max - n.min) + 0.5;
  return std::clamp(v, 0.0, 1.0);
}

AnomalyOutputs find_anomaly_outputs(const std::vector<TensorView>& views) {
  AnomalyOutputs out;
  for (const auto& v : views) {
    if (v.name == "anomaly_map" && is_map(v)) out.map = &v;
    if (v.name == "pred_score" && is_score(v)) out.score = &v;
  }
  for (const auto& v : views) {
    if (!out.map && is_map(v)) out.map = &v;
    if (!out.score && is_score(v)) out.score = &v;
  }
  return out;
}

double anomaly_decision_threshold(const AnomalyConfig& cfg) {
  if (!cfg.score) return cfg.raw_threshold;
  return cfg.sensitivity ? 1.0 - *cfg.sensitivity : 0.5;
}

std::optional<AnomalyResult> decode_anomaly(const std::vector<TensorView>& views,
                                            const AnomalyConfig& cfg) {
  const AnomalyOutputs found = find_anomaly_outputs(views);
  if (!found.map && !found.score) return std::nullopt;
  AnomalyResult r;
  // anomalib: a model that returns only the map scores the image by its peak.
  r.raw_score = found.score ? value_at(*found.score, 0) : map_max(*found.map);
  r.normalized = cfg.score.has_value();
  r.score = r.normalized ? normalize_min_max(r.raw_score, *cfg.score) : r.raw_score;
  r.threshold = anomaly_decision_threshold(cfg);
  r.anomalous = r.score >= r.threshold;
  if (found.map) r.map_name = found.map->name;
  return r;
}

MapRule anomaly_map_rule(const AnomalyConfig& cfg) {
  MapRule rule;
  rule.norm = cfg.map ? cfg.map : cfg.score;
  rule.threshold = rule.norm ? (cfg.sensitivity ? 1.0 - *cfg.sensitivity : 0.5) : cfg.raw_threshold;
  return rule;
}

std::vector<AnomalyRegion> anomaly_regions(const TensorView& map, const MapRule& rule,
                                           const MapPlacement& where) {
  if (!is_map(map))
    throw Error(ErrorKind::kStreamData, "'" + map.name + "' is not a [1,1,h,w] or [1,h,w] map");
  const std::size_t rank = map.dims.size();
  const int h = static_cast<int>(map.dims[rank - 2]), w = static_cast<int>(map.dims[rank - 1]);
  cv::Mat values(h, w, CV_64F);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double raw = value_at(map, static_cast<std::size_t>(y) * w + x);
      values.at<double>(y, x) =
          std::isnan(raw) ? -INFINITY : (rule.norm ? normalize_min_max(raw, *rule.norm) : raw);
    }
  cv::Mat mask = values >= rule.threshold;
  cv::Mat labels, stats, centroids;
  const int n = cv::connectedComponentsWithStats(mask, labels, stats, centroids, 8, CV_32S);
  std::vector<AnomalyRegion> out;
  // One cell of the map covers input/w model pixels.
  const double cell_w = static_cast<double>(where.input_width) / w;
  const double cell_h = static_cast<double>(where.input_height) / h;
  for (int i = 1; i < n; ++i) {  // 0 is the background
    const int x0 = stats.at<int>(i, cv::CC_STAT_LEFT), y0 = stats.at<int>(i, cv::CC_STAT_TOP);
    const int x1 = x0 + stats.at<int>(i, cv::CC_STAT_WIDTH);
    const int y1 = y0 + stats.at<int>(i, cv::CC_STAT_HEIGHT);
    AnomalyRegion r;
    r.cells = stats.at<int>(i, cv::CC_STAT_AREA);
    double peak = 0;
    cv::minMaxLoc(values, nullptr, &peak, nullptr, nullptr, labels == i);
    r.peak = peak;
    r.x_min =
        std::clamp((x0 * cell_w - where.offset_x) / where.scale_x, where.clip_x0, where.clip_x1);
    r.x_max =
        std::clamp((x1 * cell_w - where.offset_x) / where.scale_x, where.clip_x0, where.clip_x1);
    r.y_min =
        std::clamp((y0 * cell_h - where.offset_y) / where.scale_y, where.clip_y0, where.clip_y1);
    r.y_max =
        std::clamp((y1 * cell_h - where.offset_y) / where.scale_y, where.clip_y0, where.clip_y1);
    if (r.x_max > r.x_min && r.y_max > r.y_min) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const AnomalyRegion& a, const AnomalyRegion& b) {
    return a.cells > b.cells;
  });
  return out;
}

}  // namespace torchinfer
