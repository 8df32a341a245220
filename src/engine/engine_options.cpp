#include "engine/engine_options.h"

namespace torchinfer {

EngineOptions engine_options_for(const std::string& model_path, const ModelConfig& config) {
  EngineOptions o;
  o.model_path = model_path;
  o.input_width = config.input_width;
  o.input_height = config.input_height;
  o.channels = config.channels();
  o.declared_int8 = config.precision == ModelPrecision::kInt8;
  o.input_uint8 = config.input_uint8;
  o.input_nhwc = config.input_layout == InputLayout::kNHWC;
  return o;
}

}  // namespace torchinfer
