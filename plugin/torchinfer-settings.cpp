#include "torchinfer-settings.h"

#include "stream/regions.h"

namespace torchinfer::gst {

ConfigOverrides Settings::overrides() const {
  ConfigOverrides o;
  if (input_width > 0) o.input_width = input_width;
  if (input_height > 0) o.input_height = input_height;
  if (top_k > 0) o.top_k = top_k;
  if (channel_order == ORDER_RGB) o.channel_order = ChannelOrder::kRGB;
  if (channel_order == ORDER_BGR) o.channel_order = ChannelOrder::kBGR;
  if (channel_order == ORDER_GRAY) o.channel_order = ChannelOrder::kGray;
  if (!mean.empty()) o.mean = parse_float_list(mean);
  if (!std.empty()) o.std = parse_float_list(std);
  if (!offset.empty()) o.offset = parse_float_list(offset);
  if (scale != 0.0) o.scale = static_cast<float>(scale);
  if (task == TASK_CLASSIFICATION) o.task = Task::kClassification;
  if (task == TASK_DETECTION) o.task = Task::kDetection;
  if (task == TASK_RAW) o.task = Task::kRaw;
  if (task == TASK_ANOMALY) o.task = Task::kAnomaly;
  if (sensitivity >= 0) o.sensitivity = sensitivity;
  o.anomaly_threshold = anomaly_threshold;
  if (activation == ACT_SOFTMAX) o.output_activation = Activation::kSoftmax;
  if (activation == ACT_SIGMOID) o.output_activation = Activation::kSigmoid;
  if (activation == ACT_NONE) o.output_activation = Activation::kNone;
  if (!labels.empty()) o.labels_file = labels;
  if (input_dtype != DTYPE_AUTO) o.input_uint8 = input_dtype == DTYPE_UINT8;
  if (input_layout != LAYOUT_AUTO)
    o.input_layout = input_layout == LAYOUT_NHWC ? InputLayout::kNHWC : InputLayout::kNCHW;
  return o;
}

ContractOverrides Settings::contract_overrides() const {
  ContractOverrides o;
  o.object_padding = object_padding;
  o.keep_aspect_ratio = keep_aspect_ratio;
  o.pad_value = pad_value;
  if (object_class) o.object_classes = parse_class_list(*object_class);
  o.tile_width = tile_width;
  o.tile_height = tile_height;
  o.tile_overlap = tile_overlap;
  return o;
}

}  // namespace torchinfer::gst
