#include "common/model_config.h"

#include <sys/stat.h>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "common/model_config_anomaly.h"
#include "common/model_contract.h"
#include "common/utf8.h"

namespace torchinfer {
namespace {

using nlohmann::json;

constexpr int kMaxInputSide = 8192;
// ImageNet's 1000 labels take 21 kB.
constexpr std::size_t kMaxLabelsFileBytes = 4u << 20;

[[noreturn]] void fail(const std::string& origin, const std::string& field,
                       const std::string& what) {
  throw Error(ErrorKind::kConfigInvalid, origin + ": field '" + field + "': " + what);
}

// Anything at the path counts (stat never blocks): a FIFO or directory named
// like the sidecar then fails loudly instead of being skipped in silence.
bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A value quoted in an error: short, and valid UTF-8 whatever the file held.
std::string quote(const json& v) {
  return printable(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

int get_side(const json& j, const std::string& key, const std::string& origin) {
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > kMaxInputSide)
    fail(origin, key, "expected an integer between 1 and " + std::to_string(kMaxInputSide));
  return v.get<int>();
}

std::vector<float> get_floats(const json& j, const std::string& key, const std::string& origin) {
  const json& v = j.at(key);
  std::vector<float> out;
  if (v.is_number()) {
    out.push_back(v.get<float>());
  } else if (v.is_array() && !v.empty() && v.size() <= 3) {
    for (const auto& e : v) {
      if (!e.is_number()) fail(origin, key, "expected numbers, found " + quote(e));
      out.push_back(e.get<float>());
    }
  } else {
    fail(origin, key, "expected a number or an array of 1 or 3 numbers");
  }
  return out;
}

template <typename E>
E get_enum(const json& j, const std::string& key, const std::string& origin,
           std::initializer_list<std::pair<const char*, E>> choices) {
  const json& v = j.at(key);
  std::string allowed;
  for (const auto& c : choices) {
    if (v.is_string() && v.get<std::string>() == c.first) return c.second;
    allowed += allowed.empty() ? c.first : std::string(", ") + c.first;
  }
  fail(origin, key, "expected one of " + allowed + ", found " + quote(v));
}

std::vector<float> broadcast(const std::vector<float>& v, int channels, const char* what) {
  if (v.size() == 1) return std::vector<float>(channels, v[0]);
  if (static_cast<int>(v.size()) != channels)
    throw Error(ErrorKind::kConfigInvalid, std::string(what) + " has " + std::to_string(v.size()) +
                                               " values but the model input has " +
                                               std::to_string(channels) + " channel(s)");
  return v;
}

}  // namespace

const char* to_string(ChannelOrder v) {
  switch (v) {
    case ChannelOrder::kRGB:
      return "rgb";
    case ChannelOrder::kBGR:
      return "bgr";
    case ChannelOrder::kGray:
      return "gray";
  }
  return "?";
}

const char* to_string(Task v) {
  switch (v) {
    case Task::kClassification:
      return "classification";
    case Task::kDetection:
      return "detection";
    case Task::kRaw:
      return "raw";
    case Task::kAnomaly:
      return "anomaly";
  }
  return "?";
}

const char* to_string(Activation v) {
  switch (v) {
    case Activation::kSoftmax:
      return "softmax";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kNone:
      return "none";
  }
  return "?";
}

const char* to_string(ModelPrecision v) {
  return v == ModelPrecision::kInt8 ? "int8" : "fp32";
}

const char* to_string(Decoder v) {
  switch (v) {
    case Decoder::kYolov5:
      return "yolov5";
    case Decoder::kYolov8:
      return "yolov8";
    case Decoder::kSsd:
      return "ssd";
    case Decoder::kClassification:
      return "classification";
    case Decoder::kYolov8Seg:
      return "yolov8-seg";
    case Decoder::kYolov8Obb:
      return "yolov8-obb";
  }
  return "?";
}

const char* to_string(InputLayout v) {
  return v == InputLayout::kNHWC ? "nhwc" : "nchw";
}

ModelConfig::ModelConfig() {
  set_mean_std({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
}

void ModelConfig::set_mean_std(const std::vector<float>& mean, const std::vector<float>& std) {
  const int c = channels();
  auto m = broadcast(mean, c, "mean");
  auto s = broadcast(std, c, "std");
  for (int i = 0; i < c; ++i) {
    if (!(s[i] > 0.f) || !std::isfinite(s[i]) || !std::isfinite(m[i]))
      throw Error(ErrorKind::kConfigInvalid, "std must be positive and mean finite");
    alpha[i] = 1.f / (255.f * s[i]);
    beta[i] = -m[i] / s[i];
  }
}

void ModelConfig::set_scale_offset(float scale, const std::vector<float>& offset) {
  const int c = channels();
  auto o = broadcast(offset, c, "offset");
  if (!std::isfinite(scale) || scale == 0.f)
    throw Error(ErrorKind::kConfigInvalid, "scale must be a finite non-zero number");
  for (float v : o)
    if (!std::isfinite(v)) throw Error(ErrorKind::kConfigInvalid, "offset must be finite");
  for (int i = 0; i < c; ++i) {
    alpha[i] = scale;
    beta[i] = o[i];
  }
}

std::vector<float> parse_float_list(const std::string& text) {
  std::vector<float> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    float v = 0;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    while (used < item.size() && std::isspace(static_cast<unsigned char>(item[used]))) ++used;
    if (used == 0 || used != item.size() || !std::isfinite(v))
      throw Error(ErrorKind::kConfigInvalid,
                  "'" + text + "' is not a comma-separated list of numbers");
    out.push_back(v);
  }
  if (out.size() != 1 && out.size() != 3)
    throw Error(ErrorKind::kConfigInvalid, "'" + text + "' must hold 1 or 3 numbers");
  return out;
}

std::vector<std::string> read_labels_file(const std::string& path) {
  const std::string text = read_regular_file(path, "labels file", kMaxLabelsFileBytes);
  std::vector<std::string> labels;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Labels go into GstStructures and JSON, which both require UTF-8.
    if (!is_valid_utf8(line))
      throw Error(ErrorKind::kConfigInvalid,
                  "labels file '" + path + "' line " + std::to_string(labels.size() + 1) +
                      " is not valid UTF-8 (\"" + printable(line) + "\"); save the file as UTF-8");
    labels.push_back(line);
  }
  while (!labels.empty() && labels.back().empty()) labels.pop_back();
  if (labels.empty()) throw Error(ErrorKind::kConfigInvalid, "labels file '" + path + "' is empty");
  return labels;
}

namespace {

// Every key must be one the sidecar schema has (models/README.md): an
// unknown one is most likely a typo that would otherwise be silently
// ignored on the line. Keys starting with '_' are comments.
void refuse_unknown_keys(const json& j, const std::string& origin) {
  // clang-format off
  static const std::set<std::string> known = {
      "input_width",   "input_height",  "channel_order",
      "mean",          "std",           "scale",
      "offset",        "task",          "labels",
      "top_k",         "input_dtype",   "output_activation",
      "name",          "precision",     "quantization",
      "description",   "decoder",       "confidence_threshold",
      "iou_threshold", "max_detections", "input_layout",
      "mask_threshold"};
  // clang-format on
  // anomalib's metadata.json read as the sidecar: its own keys too.
  const bool anomalib = is_anomalib_metadata(j);
  for (const auto& item : j.items()) {
    if (!known.count(item.key()) && item.key().rfind('_', 0) != 0 &&
        !anomaly_sidecar_keys().count(item.key()) && !contract_sidecar_keys().count(item.key()) &&
        !(anomalib && anomalib_metadata_keys().count(item.key())))
      fail(origin, printable(item.key()), "unknown field");
  }
}

// The input the model takes and what it computes: size, channels, task.
void parse_model_keys(const json& j, const std::string& origin, bool anomalib, ModelConfig& cfg) {
  if (j.contains("input_width")) cfg.input_width = get_side(j, "input_width", origin);
  if (j.contains("input_height")) cfg.input_height = get_side(j, "input_height", origin);
  if (j.contains("channel_order"))
    cfg.channel_order = get_enum<ChannelOrder>(
        j, "channel_order", origin,
        {{"rgb", ChannelOrder::kRGB}, {"bgr", ChannelOrder::kBGR}, {"gray", ChannelOrder::kGray}});
  if (j.contains("task") && !anomalib)
    cfg.task = get_enum<Task>(j, "task", origin,
                              {{"classification", Task::kClassification},
                               {"detection", Task::kDetection},
                               {"raw", Task::kRaw},
                               {"anomaly", Task::kAnomaly}});
  if (j.contains("output_activation"))
    cfg.output_activation = get_enum<Activation>(j, "output_activation", origin,
                                                 {{"softmax", Activation::kSoftmax},
                                                  {"sigmoid", Activation::kSigmoid},
                                                  {"none", Activation::kNone}});
}

// How the model was built and is fed: precision, quantization, tensor layout.
void parse_precision_keys(const json& j, const std::string& origin, ModelConfig& cfg) {
  if (j.contains("precision"))
    cfg.precision = get_enum<ModelPrecision>(
        j, "precision", origin, {{"fp32", ModelPrecision::kFp32}, {"int8", ModelPrecision::kInt8}});
  if (j.contains("quantization")) {
    const json& q = j.at("quantization");
    if (!q.is_object()) fail(origin, "quantization", "expected an object");
    if (cfg.precision != ModelPrecision::kInt8)
      fail(origin, "quantization", "only valid with \"precision\": \"int8\"");
    if (q.contains("forced")) {
      if (!q.at("forced").is_boolean()) fail(origin, "quantization.forced", "expected true/false");
      cfg.accuracy_guard_forced = q.at("forced").get<bool>();
    }
  }
  if (j.contains("input_dtype"))
    cfg.input_uint8 =
        get_enum<bool>(j, "input_dtype", origin, {{"float32", false}, {"uint8", true}});
  if (j.contains("input_layout"))
    cfg.input_layout = get_enum<InputLayout>(
        j, "input_layout", origin, {{"nchw", InputLayout::kNCHW}, {"nhwc", InputLayout::kNHWC}});
}

// How its outputs are read: top-k classes, the detector decoder's settings.
void parse_decoder_keys(const json& j, const std::string& origin, ModelConfig& cfg) {
  if (j.contains("top_k")) {
    const json& v = j.at("top_k");
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000)
      fail(origin, "top_k", "expected an integer between 1 and 1000");
    cfg.top_k = v.get<int>();
  }

  if (j.contains("decoder"))
    cfg.decoder = get_enum<Decoder>(j, "decoder", origin,
                                    {{"yolov5", Decoder::kYolov5},
                                     {"yolov8", Decoder::kYolov8},
                                     {"ssd", Decoder::kSsd},
                                     {"classification", Decoder::kClassification},
                                     {"yolov8-seg", Decoder::kYolov8Seg},
                                     {"yolov8-obb", Decoder::kYolov8Obb}});
  for (const auto& [key, field] : {std::pair{"confidence_threshold", &cfg.confidence_threshold},
                                   std::pair{"iou_threshold", &cfg.iou_threshold},
                                   std::pair{"mask_threshold", &cfg.mask_threshold}}) {
    if (!j.contains(key)) continue;
    const json& v = j.at(key);
    if (!v.is_number() || v.get<double>() < 0.0 || v.get<double>() > 1.0)
      fail(origin, key, "expected a number between 0 and 1");
    *field = v.get<double>();
  }
  if (j.contains("max_detections")) {
    const json& v = j.at("max_detections");
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 100000)
      fail(origin, "max_detections", "expected an integer between 1 and 100000");
    cfg.max_detections = v.get<int>();
  }
}

// Pixel normalisation: mean/std or scale/offset (not both).
void parse_normalisation_keys(const json& j, const std::string& origin, ModelConfig& cfg) {
  const bool has_mean_std = j.contains("mean") || j.contains("std");
  const bool has_scale = j.contains("scale") || j.contains("offset");
  if (has_mean_std && has_scale)
    fail(origin, j.contains("scale") ? "scale" : "offset",
         "give either mean/std or scale/offset, not both");
  const std::string norm_field =
      has_scale ? (j.contains("scale") ? "scale" : "offset") : (j.contains("std") ? "std" : "mean");
  try {
    if (has_mean_std) {
      std::vector<float> mean =
          j.contains("mean") ? get_floats(j, "mean", origin) : std::vector<float>{0.f};
      std::vector<float> std =
          j.contains("std") ? get_floats(j, "std", origin) : std::vector<float>{1.f};
      cfg.set_mean_std(mean, std);
    } else if (has_scale) {
      if (j.contains("scale") && !j.at("scale").is_number())
        fail(origin, "scale", "expected a number");
      float scale = j.contains("scale") ? j.at("scale").get<float>() : 1.f / 255.f;
      std::vector<float> offset =
          j.contains("offset") ? get_floats(j, "offset", origin) : std::vector<float>{0.f};
      cfg.set_scale_offset(scale, offset);
    } else if (cfg.channel_order == ChannelOrder::kGray) {
      cfg.set_mean_std({0.5f}, {0.5f});
    }
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(origin, 0) == 0) throw;
    fail(origin, norm_field, e.what());
  }
}

// "labels": inline, or a labels file next to the sidecar.
void parse_labels_key(const json& j, const std::string& origin, ModelConfig& cfg) {
  if (!j.contains("labels")) return;
  const json& v = j.at("labels");
  if (v.is_string()) {
    std::string path = v.get<std::string>();
    if (!path.empty() && path[0] != '/') path = dir_of(origin) + "/" + path;
    try {
      cfg.labels = read_labels_file(path);
    } catch (const Error& e) {
      fail(origin, "labels", e.what());
    }
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_string()) fail(origin, "labels", "expected strings, found " + quote(e));
      cfg.labels.push_back(e.get<std::string>());
    }
  } else {
    fail(origin, "labels", "expected an array of strings or a labels file name");
  }
}

}  // namespace

ModelConfig parse_model_config_text(const std::string& text, const std::string& origin) {
  const json j = parse_json(text, origin);
  if (!j.is_object()) throw Error(ErrorKind::kConfigInvalid, origin + ": expected a JSON object");

  refuse_unknown_keys(j, origin);
  ModelConfig cfg;
  cfg.source = origin;
  // anomalib's metadata.json read as the sidecar: its own keys and no task.
  parse_model_keys(j, origin, is_anomalib_metadata(j), cfg);
  parse_precision_keys(j, origin, cfg);
  parse_decoder_keys(j, origin, cfg);
  parse_normalisation_keys(j, origin, cfg);
  parse_anomaly_keys(j, origin, cfg);
  parse_contract_keys(j, origin, cfg);
  parse_labels_key(j, origin, cfg);
  return cfg;
}

ModelConfig parse_model_config(const std::string& path) {
  return parse_model_config_text(read_regular_file(path, "model config", kMaxJsonFileBytes), path);
}

std::string default_sidecar_path(const std::string& model_path) {
  auto slash = model_path.find_last_of('/');
  auto dot = model_path.find_last_of('.');
  std::vector<std::string> candidates;
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
    candidates.push_back(model_path.substr(0, dot) + ".json");
  candidates.push_back(model_path + ".json");
  for (const auto& c : candidates)
    if (path_exists(c)) return c;
  return {};
}

ModelConfig resolve_model_config(const std::string& model_path, const std::string& sidecar_path,
                                 const ConfigOverrides& o) {
  ModelConfig cfg;
  if (!sidecar_path.empty()) {
    cfg = parse_model_config(sidecar_path);
  } else if (auto found = default_sidecar_path(model_path); !found.empty()) {
    cfg = parse_model_config(found);
  }
  const bool order_changes = o.channel_order && *o.channel_order != cfg.channel_order;
  if (o.input_width) cfg.input_width = *o.input_width;
  if (o.input_height) cfg.input_height = *o.input_height;
  if (o.top_k) cfg.top_k = *o.top_k;
  if (o.task) cfg.task = *o.task;
  if (o.output_activation) cfg.output_activation = *o.output_activation;
  if (o.channel_order) cfg.channel_order = *o.channel_order;
  if (o.mean || o.std) {
    cfg.set_mean_std(o.mean.value_or(std::vector<float>{0.f}),
                     o.std.value_or(std::vector<float>{1.f}));
  } else if (o.scale || o.offset) {
    cfg.set_scale_offset(o.scale.value_or(1.f / 255.f), o.offset.value_or(std::vector<float>{0.f}));
  } else if (order_changes) {
    // Switching between 1 and 3 channels leaves per-channel values undefined
    // for the new channels; repeat channel 0, which is what a user expects
    // from a scalar normalisation.
    for (int c = 1; c < 3; ++c) {
      cfg.alpha[c] = cfg.alpha[0];
      cfg.beta[c] = cfg.beta[0];
    }
  }
  if (o.labels_file) cfg.labels = read_labels_file(*o.labels_file);
  if (o.input_uint8) cfg.input_uint8 = *o.input_uint8;
  if (o.input_layout) cfg.input_layout = *o.input_layout;
  if (o.sensitivity) cfg.anomaly.sensitivity = *o.sensitivity;
  if (o.anomaly_threshold) cfg.anomaly.raw_threshold = *o.anomaly_threshold;
  check_anomaly_config(cfg);
  return cfg;
}

}  // namespace torchinfer
