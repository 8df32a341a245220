// One frame -> one slot of a float NHWC batch buffer: resize in the source's
// own layout, then colour conversion, channel selection and normalisation in a
// single pass at the (small) output size.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "common/model_config.h"
#include "common/rotated_box.h"
#include "preprocess/frame.h"
#include "preprocess/saturation.h"

namespace torchinfer {

// kArea: box filter on shrinking axes, bilinear on growing ones.
enum class ResizeMethod { kArea, kLinear, kNearest };
const char* to_string(ResizeMethod m);

// Region of interest in frame pixels; width 0 means the whole frame. For
// chroma-subsampled formats x (and y for 4:2:0) are rounded down to even.
// Bayer regions are whole 2x2 cells: x, y rounded down and the far edges up
// to even, within the frame's whole cells (an odd frame's last column or row,
// half a cell, is not read).
struct Crop {
  Crop() = default;
  Crop(int x_, int y_, int width_, int height_) : x(x_), y(y_), width(width_), height(height_) {}
  int x = 0, y = 0, width = 0, height = 0;
  // Set: a deskewed crop of this rotated box (frame pixels; x..height are
  // then its bounds clipped to the frame), resampled upright (deskew.h).
  std::optional<RotatedBox> rotated;
};

// kFloat32: normalised values; kUInt8: rounded pixel values for models that
// take raw bytes (mean/std are not applied).
enum class OutputType { kFloat32, kUInt8 };

// How a Bayer mosaic becomes RGB. kLattice: each colour's samples are
// interpolated bilinearly on their own lattice (every 2nd row and column;
// G: the mean of its two lattices) and resized in the same weights, one pass
// over the mosaic. kBilinear: the rows the resize reads are demosaicked
// (G from its 4 neighbours), then resized as RGB. kAuto: kLattice when the
// region shrinks by 2 or more on both axes, kBilinear otherwise -- the
// measured choice (docs/elements.md, "Bayer and 16-bit mono").
enum class Demosaic { kAuto, kLattice, kBilinear };

struct PreprocessOptions {
  int out_width = 224;
  int out_height = 224;
  ChannelOrder order = ChannelOrder::kRGB;
  std::array<float, 3> alpha{1.f, 1.f, 1.f};  // value = pixel * alpha + beta
  std::array<float, 3> beta{0.f, 0.f, 0.f};
  ResizeMethod method = ResizeMethod::kArea;
  bool keep_aspect_ratio = false;
  int pad_value = 114;  // letterbox fill, in 0..255 pixel units before normalising
  // The region cut to the output's aspect ratio around its centre, then
  // resized (a sidecar's "resize": "center_crop"); not with keep_aspect_ratio.
  bool center_crop = false;
  Crop crop;
  OutputType output = OutputType::kFloat32;
  // GRAY16_LE: significant low bits per sample (a 12-bit camera sends
  // 0..4095); 2^bits - 1 maps to 255 pixel units, larger values clamp
  // (counted: Preprocessor::saturation()).
  int input_bits = 16;
  Demosaic demosaic = Demosaic::kAuto;

  static PreprocessOptions from_config(const ModelConfig& cfg);
  int channels() const { return order == ChannelOrder::kGray ? 1 : 3; }
  // Values in one slot (floats or bytes, see `output`), and their size.
  std::size_t slot_values() const {
    return static_cast<std::size_t>(out_width) * out_height * channels();
  }
  std::size_t slot_bytes() const {
    return slot_values() * (output == OutputType::kUInt8 ? 1 : sizeof(float));
  }
};

class Preprocessor {
 public:
  explicit Preprocessor(const PreprocessOptions& options);
  ~Preprocessor();
  Preprocessor(const Preprocessor&) = delete;
  Preprocessor& operator=(const Preprocessor&) = delete;

  const PreprocessOptions& options() const { return opts_; }

  // Writes out_height x out_width x channels values to dst (NHWC, one slot):
  // floats, or bytes when options().output is kUInt8. Throws
  // Error(kStreamData) for empty frames, null planes or short strides,
  // Error(kInvalidArgument) for a crop outside the frame or the wrong dst type.
  FrameTransform run(const FrameView& frame, float* dst);
  FrameTransform run(const FrameView& frame, std::uint8_t* dst);
  // The same for `crop` instead of options().crop (one region of a frame:
  // inference-region=roi-list); same rounding and clipping.
  FrameTransform run(const FrameView& frame, const Crop& crop, float* dst);
  FrameTransform run(const FrameView& frame, const Crop& crop, std::uint8_t* dst);
  // Only output rows [out_height * band / bands, out_height * (band + 1) /
  // bands) of the same slot (crop: null = options().crop): `bands` calls on
  // as many Preprocessors, one per thread, write exactly what one run()
  // writes, so one frame can be shared by the inference threads.
  FrameTransform run_band(const FrameView& frame, const Crop* crop, void* dst, int band, int bands);
  // Throws what run() would throw for this frame and crop (null =
  // options().crop), without touching pixels: a frame whose preprocessing
  // is deferred still fails on its own thread.
  void check(const FrameView& frame, const Crop* crop) const;
  // What the last run() or run_band() clamped (GRAY16_LE samples above
  // input_bits; run_band: its own rows only, so the bands' sum is the
  // frame's). Always empty for 8-bit formats and input_bits 16.
  const Saturation& saturation() const { return saturation_; }

 private:
  struct Scratch;
  template <typename Out>
  FrameTransform run_impl(const FrameView& frame, const Crop& crop, Out* dst, int row_begin,
                          int row_end);
  PreprocessOptions opts_;
  std::unique_ptr<Scratch> scratch_;
  Saturation saturation_;
};

}  // namespace torchinfer
