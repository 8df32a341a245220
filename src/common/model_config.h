// What the model expects as input and what its output means, merged from
// defaults (torchvision conventions), the JSON sidecar and element properties.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace torchinfer {

enum class ChannelOrder { kRGB, kBGR, kGray };
enum class Task { kClassification, kDetection, kRaw, kAnomaly };
enum class Activation { kSoftmax, kSigmoid, kNone };
// What the model file holds (written by models/quantize.py), not a request.
enum class ModelPrecision { kFp32, kInt8 };
// How torchnms turns output tensors into results (src/decode/detection.h).
enum class Decoder { kYolov5, kYolov8, kSsd, kClassification, kYolov8Seg, kYolov8Obb };
// The input tensor's layout forward() expects: [N,C,H,W] (PyTorch's
// convention) or [N,H,W,C] (models converted from TensorFlow/Keras).
enum class InputLayout { kNCHW, kNHWC };
// How the frame (or a region's crop) becomes the model input: stretched to
// it, scaled to fit and padded (letterbox), or scaled to cover and cut to
// its aspect ratio around the centre (center_crop).
enum class ResizeMode { kStretch, kLetterbox, kCenterCrop };

const char* to_string(ChannelOrder v);
const char* to_string(Task v);
const char* to_string(Activation v);
const char* to_string(ModelPrecision v);
const char* to_string(Decoder v);
const char* to_string(InputLayout v);
const char* to_string(ResizeMode v);

// Min-max normalisation of an anomaly model's outputs, as anomalib does it:
// normalised = clamp((raw - threshold) / (max - min) + 0.5, 0, 1).
struct MinMaxNorm {
  double threshold = 0, min = 0, max = 1;
};

// task "anomaly" (src/decode/anomaly.h): the sidecar's (or anomalib
// metadata.json's) thresholds and the decision rule.
struct AnomalyConfig {
  std::optional<MinMaxNorm> score;  // image_threshold + min/max (pred_scores.min/max)
  std::optional<MinMaxNorm> map;    // pixel_threshold + min/max (anomaly_maps.min/max)
  // Normalised outputs: anomalous iff score >= 1 - sensitivity (anomalib's
  // image_sensitivity; unset = 0.5, the threshold itself).
  std::optional<double> sensitivity;
  // Raw outputs (no thresholds): anomalous iff raw score >= this.
  double raw_threshold = 0.5;
};

// What the model needs to be fed right, as its sidecar says (unset: the
// element's property or default; common/model_contract.h resolves them).
struct InputContract {
  std::optional<double> object_padding;  // per side, fraction of the box
  std::optional<ResizeMode> resize;
  std::optional<int> pad_value;                            // letterbox fill, 0..255
  std::optional<std::vector<std::string>> object_classes;  // region labels it judges
  // inference-region=tiles: the tile the model was fitted on, in frame
  // pixels (0 = the model's input size), and the overlap fraction.
  std::optional<int> tile_width, tile_height;
  std::optional<double> tile_overlap;
};

struct ModelConfig {
  int input_width = 224;
  int input_height = 224;
  ChannelOrder channel_order = ChannelOrder::kRGB;
  // value = pixel(0..255) * alpha[c] + beta[c]; mean/std and scale/offset
  // both reduce to this, so the preprocessor has one fused multiply-add.
  std::array<float, 3> alpha{};
  std::array<float, 3> beta{};
  Task task = Task::kClassification;
  Activation output_activation = Activation::kSoftmax;
  int top_k = 5;
  std::vector<std::string> labels;
  ModelPrecision precision = ModelPrecision::kFp32;
  // "uint8": the model takes raw 0..255 pixels; mean/std/scale do not apply.
  bool input_uint8 = false;
  InputLayout input_layout = InputLayout::kNCHW;
  // quantize.py --force wrote it although the accuracy guard failed.
  bool accuracy_guard_forced = false;
  // Detection post-processing (torchnms); unset = the element's defaults.
  std::optional<Decoder> decoder;
  std::optional<double> confidence_threshold, iou_threshold;
  std::optional<int> max_detections;
  std::optional<double> mask_threshold;  // yolov8-seg, 0..1
  AnomalyConfig anomaly;
  InputContract contract;
  std::string source;  // sidecar path it came from, empty for defaults

  ModelConfig();
  int channels() const { return channel_order == ChannelOrder::kGray ? 1 : 3; }
  void set_mean_std(const std::vector<float>& mean, const std::vector<float>& std);
  void set_scale_offset(float scale, const std::vector<float>& offset);
};

// Values given as element properties; each one set wins over the sidecar.
struct ConfigOverrides {
  std::optional<int> input_width, input_height, top_k;
  std::optional<ChannelOrder> channel_order;
  std::optional<std::vector<float>> mean, std, offset;
  std::optional<float> scale;
  std::optional<Task> task;
  std::optional<Activation> output_activation;
  std::optional<std::string> labels_file;
  std::optional<bool> input_uint8;
  std::optional<InputLayout> input_layout;
  std::optional<double> sensitivity, anomaly_threshold;
};

// Parses a sidecar file. Errors name the file and the offending field.
ModelConfig parse_model_config(const std::string& sidecar_path);
ModelConfig parse_model_config_text(const std::string& json_text, const std::string& origin);

// Default sidecar for a model: "dir/net.pt" -> "dir/net.json"; empty if none exists.
std::string default_sidecar_path(const std::string& model_path);

// Full resolution used by the element: explicit sidecar (must exist), else the
// default one beside the model if present, else defaults; then overrides.
ModelConfig resolve_model_config(const std::string& model_path, const std::string& sidecar_path,
                                 const ConfigOverrides& overrides);

std::vector<std::string> read_labels_file(const std::string& path);

// "0.485, 0.456,0.406" -> {0.485, 0.456, 0.406}; throws kConfigInvalid.
std::vector<float> parse_float_list(const std::string& text);

}  // namespace torchinfer
