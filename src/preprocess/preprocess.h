// One frame -> one slot of a float NHWC batch buffer: resize in the source's
// own layout, then colour conversion, channel selection and normalisation in a
// single pass at the (small) output size.
#pragma once

#include <array>
#include <memory>

#include "common/model_config.h"
#include "preprocess/frame.h"

namespace torchinfer {

enum class ResizeMethod { kArea, kLinear, kNearest };
const char* to_string(ResizeMethod m);

struct PreprocessOptions {
  int out_width = 224;
  int out_height = 224;
  ChannelOrder order = ChannelOrder::kRGB;
  std::array<float, 3> alpha{1.f, 1.f, 1.f};  // value = pixel * alpha + beta
  std::array<float, 3> beta{0.f, 0.f, 0.f};
  ResizeMethod method = ResizeMethod::kArea;
  bool keep_aspect_ratio = false;
  int pad_value = 114;  // letterbox fill, in 0..255 pixel units before normalising

  static PreprocessOptions from_config(const ModelConfig& cfg);
  int channels() const { return order == ChannelOrder::kGray ? 1 : 3; }
  std::size_t slot_floats() const {
    return static_cast<std::size_t>(out_width) * out_height * channels();
  }
};

class Preprocessor {
 public:
  explicit Preprocessor(const PreprocessOptions& options);
  ~Preprocessor();
  Preprocessor(const Preprocessor&) = delete;
  Preprocessor& operator=(const Preprocessor&) = delete;

  const PreprocessOptions& options() const { return opts_; }

  // The transform a frame of this size will get; no pixels touched.
  FrameTransform transform_for(int width, int height) const;

  // Writes out_height x out_width x channels floats to dst (NHWC, one slot).
  // Throws Error(kInvalidArgument) for empty frames or null planes.
  FrameTransform run(const FrameView& frame, float* dst);

 private:
  struct Scratch;
  PreprocessOptions opts_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace torchinfer
