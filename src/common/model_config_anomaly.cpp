#include "common/model_config_anomaly.h"

#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/utf8.h"

namespace torchinfer {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& field,
                       const std::string& what) {
  throw Error(ErrorKind::kConfigInvalid, origin + ": field '" + field + "': " + what);
}

std::optional<double> number(const json& j, const char* key, const std::string& origin) {
  if (!j.contains(key)) return std::nullopt;
  const json& v = j.at(key);
  // anomalib writes a one-element list for some tensors ([0.93]).
  const json& n = v.is_array() && v.size() == 1 ? v.at(0) : v;
  if (!n.is_number() || !std::isfinite(n.get<double>()))
    fail(origin, key, "expected a finite number");
  return n.get<double>();
}

// The normalisation divides by max - min and subtracts the threshold from
// raw scores: finite keys can still overflow there (-1e308 .. 1e308 gives
// an infinite range, a denormal range an infinite 1 / range), and then
// every score normalises to 0.5 or to NaN. Refused, naming the keys.
void check_derived_range(const std::string& origin, const char* threshold_key,
                         const std::string& min_name, const std::string& max_name, double thr,
                         double mn, double mx) {
  const double range = mx - mn;
  if (!std::isfinite(range) || !std::isfinite(1.0 / range))
    fail(origin, max_name,
         "'" + max_name + "' - '" + min_name + "' (" + std::to_string(mx) + " - " +
             std::to_string(mn) +
             ") is not a finite, non-zero number; give the raw range from the model's "
             "metadata.json");
  if (!std::isfinite(thr - mn) || !std::isfinite(mx - thr))
    fail(origin, threshold_key,
         "its distance to '" + min_name + "' or '" + max_name +
             "' overflows; give the raw range from the model's metadata.json");
}

// One output's threshold and min/max: all three or none, min < max, the
// threshold inside [min, max] (else every result is clamped to 0 or 1).
std::optional<MinMaxNorm> read_norm(const json& j, const std::string& origin,
                                    const char* threshold_key, const char* min_key,
                                    const char* max_key) {
  const auto thr = number(j, threshold_key, origin);
  const auto own_min = number(j, min_key, origin), own_max = number(j, max_key, origin);
  const auto shared_min = number(j, "min", origin), shared_max = number(j, "max", origin);
  if ((own_min || own_max) && (shared_min || shared_max))
    fail(origin, own_min ? min_key : max_key,
         "give either 'min'/'max' or the per-output keys, not both");
  const auto mn = own_min ? own_min : shared_min;
  const auto mx = own_max ? own_max : shared_max;
  const std::string min_name = own_min ? min_key : "min", max_name = own_max ? max_key : "max";
  if (!thr) return std::nullopt;
  if (!mn || !mx)
    fail(origin, threshold_key,
         std::string("needs the raw range too: add 'min' and 'max' (or '") + min_key + "' and '" +
             max_key + "') from the model's metadata.json");
  if (!(*mn < *mx))
    fail(origin, max_name, "must be greater than '" + min_name + "' (" + std::to_string(*mn) + ")");
  if (*thr < *mn || *thr > *mx)
    fail(origin, threshold_key,
         std::to_string(*thr) + " lies outside ['" + min_name + "', '" + max_name + "'] = [" +
             std::to_string(*mn) + ", " + std::to_string(*mx) + "]");
  check_derived_range(origin, threshold_key, min_name, max_name, *thr, *mn, *mx);
  return MinMaxNorm{*thr, *mn, *mx};
}

// A min/max nobody uses is most likely a missing threshold key.
void check_unused_ranges(const json& j, const std::string& origin, const AnomalyConfig& a) {
  for (const char* key : {"min", "max"})
    if (j.contains(key) && !a.score && !a.map)
      fail(origin, key, "has no 'image_threshold' or 'pixel_threshold' to go with it");
  for (const char* key : {"pred_scores.min", "pred_scores.max"})
    if (j.contains(key) && !a.score) fail(origin, key, "has no 'image_threshold' to go with it");
  for (const char* key : {"anomaly_maps.min", "anomaly_maps.max"})
    if (j.contains(key) && !a.map) fail(origin, key, "has no 'pixel_threshold' to go with it");
}

std::string class_name(const json& t) {
  if (!t.is_object() || !t.contains("__class_fullname__") || !t["__class_fullname__"].is_string())
    return {};
  std::string n = t["__class_fullname__"].get<std::string>();
  const auto dot = n.find_last_of('.');
  return dot == std::string::npos ? n : n.substr(dot + 1);
}

// anomalib's albumentations pipeline: Resize gives the input size and
// Normalize the mean/std; anything that changes the pixels otherwise (a crop)
// cannot be reproduced here and is refused rather than ignored.
void read_transform(const json& j, const std::string& origin, ModelConfig& cfg) {
  const json& t = j.at("transform");
  const json* list = nullptr;
  if (t.is_object() && t.contains("transform") && t["transform"].is_object() &&
      t["transform"].contains("transforms"))
    list = &t["transform"]["transforms"];
  if (!list || !list->is_array())
    fail(origin, "transform", "expected anomalib's albumentations dict with a list of transforms");
  for (const json& step : *list) {
    const std::string name = class_name(step);
    if (name == "Resize") {
      if (!j.contains("input_width")) cfg.input_width = step.value("width", cfg.input_width);
      if (!j.contains("input_height")) cfg.input_height = step.value("height", cfg.input_height);
      if (cfg.input_width < 1 || cfg.input_width > 8192 || cfg.input_height < 1 ||
          cfg.input_height > 8192)
        fail(origin, "transform", "Resize has an input size outside 1..8192");
    } else if (name == "Normalize") {
      if (j.contains("mean") || j.contains("std") || j.contains("scale")) continue;
      if (step.value("max_pixel_value", 255.0) != 255.0)
        fail(origin, "transform", "Normalize with max_pixel_value other than 255 is not supported");
      try {
        cfg.set_mean_std(step.at("mean").get<std::vector<float>>(),
                         step.at("std").get<std::vector<float>>());
      } catch (const Error& e) {
        fail(origin, "transform", std::string("Normalize: ") + e.what());
      } catch (const json::exception&) {
        fail(origin, "transform", "Normalize needs 'mean' and 'std' lists of numbers");
      }
    } else if (name != "ToTensorV2") {
      fail(origin, "transform",
           "step '" + printable(name.empty() ? step.dump() : name) +
               "' is not supported (only Resize, Normalize, ToTensorV2): export the model without "
               "it, or give input_width/input_height/mean/std and crop with torchinfer's crop");
    }
  }
}

}  // namespace

const std::set<std::string>& anomaly_sidecar_keys() {
  static const std::set<std::string> keys = {"image_threshold",
                                             "pixel_threshold",
                                             "min",
                                             "max",
                                             "pred_scores.min",
                                             "pred_scores.max",
                                             "anomaly_maps.min",
                                             "anomaly_maps.max",
                                             "sensitivity",
                                             "anomaly_threshold"};
  return keys;
}

const std::set<std::string>& anomalib_metadata_keys() {
  // box_scores.*: anomalib's detection-task range, unused here.
  static const std::set<std::string> keys = {"transform", "box_scores.min", "box_scores.max"};
  return keys;
}

bool is_anomalib_metadata(const json& j) {
  return j.is_object() && j.contains("transform");
}

void parse_anomaly_keys(const json& j, const std::string& origin, ModelConfig& cfg) {
  const bool anomalib = is_anomalib_metadata(j);
  if (anomalib) {
    // anomalib's task says what the model was validated on; every one of
    // them is an anomaly model here.
    if (j.contains("task")) {
      const json& v = j.at("task");
      if (!v.is_string() ||
          (v != "classification" && v != "segmentation" && v != "detection" && v != "anomaly"))
        fail(origin, "task", "anomalib's task must be classification, segmentation or detection");
    }
    cfg.task = Task::kAnomaly;
    try {
      read_transform(j, origin, cfg);
    } catch (const json::exception&) {
      // A step's field of the wrong type ("width": "wide").
      fail(origin, "transform", "a Resize/Normalize field has the wrong type");
    }
  }
  AnomalyConfig& a = cfg.anomaly;
  a.score = read_norm(j, origin, "image_threshold", "pred_scores.min", "pred_scores.max");
  a.map = read_norm(j, origin, "pixel_threshold", "anomaly_maps.min", "anomaly_maps.max");
  check_unused_ranges(j, origin, a);
  if (const auto s = number(j, "sensitivity", origin)) {
    if (*s < 0 || *s > 1) fail(origin, "sensitivity", "expected a number between 0 and 1");
    a.sensitivity = s;
  }
  if (const auto t = number(j, "anomaly_threshold", origin)) a.raw_threshold = *t;
  if (cfg.task != Task::kAnomaly)
    for (const auto& key : anomaly_sidecar_keys())
      if (j.contains(key)) fail(origin, key, "only valid with \"task\": \"anomaly\"");
  check_anomaly_config(cfg);
}

void check_anomaly_config(const ModelConfig& cfg) {
  const AnomalyConfig& a = cfg.anomaly;
  if (cfg.task != Task::kAnomaly || !a.sensitivity || a.score || a.map) return;
  throw Error(ErrorKind::kConfigInvalid,
              (cfg.source.empty() ? std::string("model config") : cfg.source) +
                  ": 'sensitivity' shifts the decision on normalised scores, but there are no "
                  "'image_threshold'/'min'/'max' to normalise with; set anomaly-threshold "
                  "(raw units) instead, or add the thresholds from the model's metadata.json");
}

}  // namespace torchinfer
