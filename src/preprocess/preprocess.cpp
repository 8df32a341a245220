#include "preprocess/preprocess.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "common/error.h"

namespace torchinfer {
namespace {

// Where each component sits in one source "pixel" as cv::resize sees it.
// Packed 4:2:2 is viewed as width/2 four-channel pixels (Y0 U Y1 V): area
// averaging those pairs averages luma and chroma over the same footprint, and
// colour conversion (affine) then runs once per output pixel, not per input.
struct SourceLayout {
  enum Kind { kPackedRGB, kGray, kPacked422 } kind;
  int channels;
  int i0, i1, i2, i3;  // RGB: r,g,b,-   422: y0,u,y1,v
};

SourceLayout layout_of(PixelFormat f) {
  switch (f) {
    case PixelFormat::kRGB:
      return {SourceLayout::kPackedRGB, 3, 0, 1, 2, 0};
    case PixelFormat::kBGR:
      return {SourceLayout::kPackedRGB, 3, 2, 1, 0, 0};
    case PixelFormat::kRGBx:
    case PixelFormat::kRGBA:
      return {SourceLayout::kPackedRGB, 4, 0, 1, 2, 0};
    case PixelFormat::kBGRx:
    case PixelFormat::kBGRA:
      return {SourceLayout::kPackedRGB, 4, 2, 1, 0, 0};
    case PixelFormat::kxRGB:
    case PixelFormat::kARGB:
      return {SourceLayout::kPackedRGB, 4, 1, 2, 3, 0};
    case PixelFormat::kxBGR:
    case PixelFormat::kABGR:
      return {SourceLayout::kPackedRGB, 4, 3, 2, 1, 0};
    case PixelFormat::kGRAY8:
      return {SourceLayout::kGray, 1, 0, 0, 0, 0};
    case PixelFormat::kYUY2:
      return {SourceLayout::kPacked422, 4, 0, 1, 2, 3};
    case PixelFormat::kUYVY:
      return {SourceLayout::kPacked422, 4, 1, 0, 3, 2};
  }
  throw Error(ErrorKind::kInvalidArgument, "unsupported pixel format");
}

// Y'CbCr -> R'G'B' in 0..255 pixel units: rgb = k_y * (Y - y_off) + chroma terms.
struct YuvCoefficients {
  float y_off, k_y, r_v, g_u, g_v, b_u;
};

YuvCoefficients yuv_coefficients(YuvMatrix m, bool full_range) {
  double kr = 0.299, kb = 0.114;
  if (m == YuvMatrix::kBT709) kr = 0.2126, kb = 0.0722;
  if (m == YuvMatrix::kBT2020) kr = 0.2627, kb = 0.0593;
  const double kg = 1.0 - kr - kb;
  const double y_scale = full_range ? 1.0 : 255.0 / 219.0;
  const double c_scale = full_range ? 1.0 : 255.0 / 224.0;
  YuvCoefficients c;
  c.y_off = full_range ? 0.f : 16.f;
  c.k_y = static_cast<float>(y_scale);
  c.r_v = static_cast<float>(2.0 * (1.0 - kr) * c_scale);
  c.g_u = static_cast<float>(-2.0 * kb * (1.0 - kb) / kg * c_scale);
  c.g_v = static_cast<float>(-2.0 * kr * (1.0 - kr) / kg * c_scale);
  c.b_u = static_cast<float>(2.0 * (1.0 - kb) * c_scale);
  return c;
}

inline float clamp255(float v) {
  return std::min(255.f, std::max(0.f, v));
}

int cv_interpolation(ResizeMethod m) {
  switch (m) {
    case ResizeMethod::kArea:
      return cv::INTER_AREA;
    case ResizeMethod::kLinear:
      return cv::INTER_LINEAR;
    case ResizeMethod::kNearest:
      return cv::INTER_NEAREST;
  }
  return cv::INTER_AREA;
}

// Writes one output row of rgb triples (0..255) as normalised model channels.
struct ChannelWriter {
  const PreprocessOptions& o;
  inline void put(float r, float g, float b, float* d) const {
    switch (o.order) {
      case ChannelOrder::kRGB:
        d[0] = r * o.alpha[0] + o.beta[0];
        d[1] = g * o.alpha[1] + o.beta[1];
        d[2] = b * o.alpha[2] + o.beta[2];
        break;
      case ChannelOrder::kBGR:
        d[0] = b * o.alpha[0] + o.beta[0];
        d[1] = g * o.alpha[1] + o.beta[1];
        d[2] = r * o.alpha[2] + o.beta[2];
        break;
      case ChannelOrder::kGray:
        // BT.601 luma weights, as cv::cvtColor(RGB2GRAY) uses.
        d[0] = (0.299f * r + 0.587f * g + 0.114f * b) * o.alpha[0] + o.beta[0];
        break;
    }
  }
  inline void put_gray(float v, float* d) const {
    for (int c = 0; c < o.channels(); ++c) d[c] = v * o.alpha[c] + o.beta[c];
  }
};

}  // namespace

const char* to_string(PixelFormat f) {
  switch (f) {
    case PixelFormat::kYUY2:
      return "YUY2";
    case PixelFormat::kUYVY:
      return "UYVY";
    case PixelFormat::kRGB:
      return "RGB";
    case PixelFormat::kBGR:
      return "BGR";
    case PixelFormat::kRGBx:
      return "RGBx";
    case PixelFormat::kBGRx:
      return "BGRx";
    case PixelFormat::kxRGB:
      return "xRGB";
    case PixelFormat::kxBGR:
      return "xBGR";
    case PixelFormat::kRGBA:
      return "RGBA";
    case PixelFormat::kBGRA:
      return "BGRA";
    case PixelFormat::kARGB:
      return "ARGB";
    case PixelFormat::kABGR:
      return "ABGR";
    case PixelFormat::kGRAY8:
      return "GRAY8";
  }
  return "?";
}

const char* to_string(ResizeMethod m) {
  switch (m) {
    case ResizeMethod::kArea:
      return "area";
    case ResizeMethod::kLinear:
      return "linear";
    case ResizeMethod::kNearest:
      return "nearest";
  }
  return "?";
}

PreprocessOptions PreprocessOptions::from_config(const ModelConfig& cfg) {
  PreprocessOptions o;
  o.out_width = cfg.input_width;
  o.out_height = cfg.input_height;
  o.order = cfg.channel_order;
  o.alpha = cfg.alpha;
  o.beta = cfg.beta;
  return o;
}

struct Preprocessor::Scratch {
  cv::Mat resized;
};

Preprocessor::Preprocessor(const PreprocessOptions& options)
    : opts_(options), scratch_(std::make_unique<Scratch>()) {
  if (opts_.out_width < 1 || opts_.out_height < 1)
    throw Error(ErrorKind::kInvalidArgument, "model input size must be positive");
  if (opts_.pad_value < 0 || opts_.pad_value > 255)
    throw Error(ErrorKind::kInvalidArgument, "pad value must be within 0..255");
}

Preprocessor::~Preprocessor() = default;

FrameTransform Preprocessor::transform_for(int width, int height) const {
  FrameTransform t;
  if (width < 1 || height < 1) return t;
  t.scale_x = static_cast<double>(opts_.out_width) / width;
  t.scale_y = static_cast<double>(opts_.out_height) / height;
  if (opts_.keep_aspect_ratio) {
    const double s = std::min(t.scale_x, t.scale_y);
    const int new_w = std::max(1, static_cast<int>(std::lround(width * s)));
    const int new_h = std::max(1, static_cast<int>(std::lround(height * s)));
    // The exact per-axis scale of the resized area, so boxes map back exactly.
    t.scale_x = static_cast<double>(new_w) / width;
    t.scale_y = static_cast<double>(new_h) / height;
    t.offset_x = (opts_.out_width - new_w) / 2;
    t.offset_y = (opts_.out_height - new_h) / 2;
  }
  return t;
}

FrameTransform Preprocessor::run(const FrameView& f, float* dst) {
  if (f.width < 1 || f.height < 1 || !f.planes[0] || !dst)
    throw Error(ErrorKind::kInvalidArgument, "empty frame or missing plane");
  const SourceLayout L = layout_of(f.format);
  const int src_cols = L.kind == SourceLayout::kPacked422 ? (f.width + 1) / 2 : f.width;
  if (f.strides[0] < src_cols * L.channels)
    throw Error(ErrorKind::kInvalidArgument, "plane stride smaller than a row");

  const FrameTransform t = transform_for(f.width, f.height);
  const int new_w = static_cast<int>(std::lround(f.width * t.scale_x));
  const int new_h = static_cast<int>(std::lround(f.height * t.scale_y));
  const int off_x = static_cast<int>(t.offset_x);
  const int off_y = static_cast<int>(t.offset_y);

  const cv::Mat src(f.height, src_cols, CV_8UC(L.channels), const_cast<std::uint8_t*>(f.planes[0]),
                    static_cast<std::size_t>(f.strides[0]));
  cv::Mat small;
  if (L.kind != SourceLayout::kPacked422 && new_w == f.width && new_h == f.height) {
    small = src;
  } else {
    cv::resize(src, scratch_->resized, cv::Size(new_w, new_h), 0, 0,
               cv_interpolation(opts_.method));
    small = scratch_->resized;
  }

  const int C = opts_.channels();
  const ChannelWriter w{opts_};
  if (opts_.keep_aspect_ratio && (new_w != opts_.out_width || new_h != opts_.out_height)) {
    float pad[3];
    const float p = static_cast<float>(opts_.pad_value);
    w.put_gray(p, pad);
    const std::size_t n = static_cast<std::size_t>(opts_.out_width) * opts_.out_height;
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < C; ++c) dst[i * C + c] = pad[c];
  }

  const YuvCoefficients k = yuv_coefficients(f.matrix, f.full_range);
  for (int y = 0; y < new_h; ++y) {
    const std::uint8_t* s = small.ptr<std::uint8_t>(y);
    float* d = dst + (static_cast<std::size_t>(y + off_y) * opts_.out_width + off_x) * C;
    switch (L.kind) {
      case SourceLayout::kPackedRGB:
        for (int x = 0; x < new_w; ++x, s += L.channels, d += C)
          w.put(s[L.i0], s[L.i1], s[L.i2], d);
        break;
      case SourceLayout::kGray:
        for (int x = 0; x < new_w; ++x, ++s, d += C) w.put_gray(s[0], d);
        break;
      case SourceLayout::kPacked422:
        for (int x = 0; x < new_w; ++x, s += 4, d += C) {
          const float luma = k.k_y * (0.5f * (s[L.i0] + s[L.i2]) - k.y_off);
          const float u = s[L.i1] - 128.f, v = s[L.i3] - 128.f;
          if (opts_.order == ChannelOrder::kGray) {
            w.put_gray(clamp255(luma), d);
          } else {
            w.put(clamp255(luma + k.r_v * v), clamp255(luma + k.g_u * u + k.g_v * v),
                  clamp255(luma + k.b_u * u), d);
          }
        }
        break;
    }
  }
  return t;
}

}  // namespace torchinfer
