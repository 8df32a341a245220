// Fused preprocessing vs the chain users write first (OpenCV: convert to RGB
// at full size, resize, normalise) vs a plain memcpy of the source frame, on
// one thread. Run through tests/bench/preprocess.sh for the ratio table.
#include <benchmark/benchmark.h>

#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "common/aligned_buffer.h"
#include "frames.h"
#include "preprocess/preprocess.h"
#include "preprocess/saturation.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

PreprocessOptions model_input(int w, int h, bool letterbox) {
  PreprocessOptions o;
  o.out_width = w;
  o.out_height = h;
  o.keep_aspect_ratio = letterbox;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; ++c) o.alpha[c] = 1.f / (255 * std[c]), o.beta[c] = -mean[c] / std[c];
  return o;
}

const OwnedFrame& frame(PixelFormat f, int w, int h) {
  static std::map<std::tuple<int, int, int>, OwnedFrame> cache;
  auto key = std::make_tuple(static_cast<int>(f), w, h);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_frame(make_rgb_image(w, h, 1), f)).first;
  return it->second;
}

std::size_t frame_bytes(const OwnedFrame& f) {
  const FrameView& v = f.view;
  switch (v.format) {
    case PixelFormat::kNV12:
    case PixelFormat::kI420:
      return static_cast<std::size_t>(v.width) * v.height * 3 / 2;
    case PixelFormat::kYUY2:
    case PixelFormat::kGRAY16_LE:
      return static_cast<std::size_t>(v.width) * v.height * 2;
    case PixelFormat::kBayerRGGB:
    case PixelFormat::kBayerBGGR:
    case PixelFormat::kBayerGRBG:
    case PixelFormat::kBayerGBRG:
      return static_cast<std::size_t>(v.width) * v.height;
    default:
      return static_cast<std::size_t>(v.width) * v.height * 3;
  }
}

// The usual chain: full-size colour conversion, resize, normalising loop.
void reference_chain(const OwnedFrame& f, const PreprocessOptions& o, cv::Mat& rgb, cv::Mat& small,
                     float* dst) {
  const FrameView& v = f.view;
  auto* p0 = const_cast<std::uint8_t*>(v.planes[0]);
  switch (v.format) {
    case PixelFormat::kYUY2:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC2, p0, v.strides[0]), rgb,
                   cv::COLOR_YUV2RGB_YUY2);
      break;
    case PixelFormat::kNV12:
      cv::cvtColorTwoPlane(cv::Mat(v.height, v.width, CV_8UC1, p0, v.strides[0]),
                           cv::Mat(v.height / 2, v.width / 2, CV_8UC2,
                                   const_cast<std::uint8_t*>(v.planes[1]), v.strides[1]),
                           rgb, cv::COLOR_YUV2RGB_NV12);
      break;
    case PixelFormat::kI420: {
      // cvtColor wants the three planes in one buffer.
      static cv::Mat packed;
      packed.create(v.height * 3 / 2, v.width, CV_8UC1);
      for (int y = 0; y < v.height; ++y) std::memcpy(packed.ptr(y), p0 + y * v.strides[0], v.width);
      for (int p = 1; p < 3; ++p)
        for (int y = 0; y < v.height / 2; ++y)
          std::memcpy(packed.data + v.width * v.height + (p - 1) * (v.width * v.height / 4) +
                          y * (v.width / 2),
                      v.planes[p] + y * v.strides[p], v.width / 2);
      cv::cvtColor(packed, rgb, cv::COLOR_YUV2RGB_I420);
      break;
    }
    case PixelFormat::kBayerBGGR:  // a full-size demosaic first, as bayer2rgb does
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC1, p0, v.strides[0]), rgb,
                   cv::COLOR_BayerBG2RGB);
      break;
    case PixelFormat::kGRAY16_LE: {  // to 8 bits, then to 3 channels
      static cv::Mat gray;
      cv::Mat(v.height, v.width, CV_16UC1, p0, v.strides[0]).convertTo(gray, CV_8U, 1 / 257.0);
      cv::cvtColor(gray, rgb, cv::COLOR_GRAY2RGB);
      break;
    }
    default:
      rgb = cv::Mat(v.height, v.width, CV_8UC3, p0, v.strides[0]);
      break;
  }
  int new_w = o.out_width, new_h = o.out_height;
  if (o.keep_aspect_ratio) {
    const double s = std::min(static_cast<double>(o.out_width) / v.width,
                              static_cast<double>(o.out_height) / v.height);
    new_w = static_cast<int>(v.width * s + 0.5), new_h = static_cast<int>(v.height * s + 0.5);
  }
  cv::resize(rgb, small, cv::Size(new_w, new_h), 0, 0, cv::INTER_AREA);
  if (o.keep_aspect_ratio)
    cv::copyMakeBorder(small, small, (o.out_height - new_h) / 2,
                       o.out_height - new_h - (o.out_height - new_h) / 2, (o.out_width - new_w) / 2,
                       o.out_width - new_w - (o.out_width - new_w) / 2, cv::BORDER_CONSTANT,
                       cv::Scalar::all(o.pad_value));
  for (int y = 0; y < small.rows; ++y) {
    const std::uint8_t* s = small.ptr<std::uint8_t>(y);
    float* d = dst + static_cast<std::size_t>(y) * small.cols * 3;
    for (int x = 0; x < small.cols * 3; ++x) d[x] = s[x] * o.alpha[x % 3] + o.beta[x % 3];
  }
}

void BM_Memcpy(benchmark::State& state, PixelFormat fmt, int w, int h) {
  const OwnedFrame& f = frame(fmt, w, h);
  const std::size_t n = frame_bytes(f);
  std::vector<std::uint8_t> dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), f.bytes.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
}

void BM_Reference(benchmark::State& state, PixelFormat fmt, int w, int h, int ow, int oh, bool lb) {
  cv::setNumThreads(1);
  const OwnedFrame& f = frame(fmt, w, h);
  const PreprocessOptions o = model_input(ow, oh, lb);
  AlignedBuffer dst(o.slot_bytes());
  cv::Mat rgb, small;
  for (auto _ : state) {
    reference_chain(f, o, rgb, small, dst.data<float>());
    benchmark::DoNotOptimize(dst.data());
  }
}

void BM_Fused(benchmark::State& state, PixelFormat fmt, int w, int h, int ow, int oh, bool lb) {
  const OwnedFrame& f = frame(fmt, w, h);
  const PreprocessOptions o = model_input(ow, oh, lb);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  for (auto _ : state) {
    pre.run(f.view, dst.data<float>());
    benchmark::DoNotOptimize(dst.data());
  }
}

// A 12-bit mono camera (input-bits=12): the frame's 16-bit samples shifted
// down by `shift` (4: all within 0..4095; 0: most above it, clamped and
// counted, the worst case for the saturation count).
void BM_Gray16Bits(benchmark::State& state, int w, int h, int ow, int oh, int shift) {
  static std::map<std::tuple<int, int, int>, OwnedFrame> cache;
  auto key = std::make_tuple(w, h, shift);
  auto it = cache.find(key);
  if (it == cache.end()) {
    OwnedFrame f = make_frame(make_rgb_image(w, h, 1), PixelFormat::kGRAY16_LE);
    for (int y = 0; y < h; ++y) {
      auto* row = reinterpret_cast<std::uint16_t*>(f.bytes.data() + y * f.view.strides[0]);
      for (int x = 0; x < w; ++x) row[x] = static_cast<std::uint16_t>(row[x] >> shift);
    }
    it = cache.emplace(key, std::move(f)).first;
  }
  PreprocessOptions o = model_input(ow, oh, false);
  o.input_bits = 12;
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  for (auto _ : state) {
    pre.run(it->second.view, dst.data<float>());
    benchmark::DoNotOptimize(dst.data());
  }
}

// The saturation count of one 224-pixel output row (what a GRAY16 frame
// with input-bits < 16 adds per row): within range, and every pixel above.
void BM_ClampedInRow(benchmark::State& state, float value) {
  std::vector<float> row(224);
  for (std::size_t x = 0; x < row.size(); ++x) row[x] = value - static_cast<float>(x % 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(row.data());
    benchmark::DoNotOptimize(clamped_in_row(row.data(), 224, 4095));
  }
}
BENCHMARK_CAPTURE(BM_ClampedInRow, in_range_224, 4000.f);
BENCHMARK_CAPTURE(BM_ClampedInRow, saturated_224, 9000.f);

#define CASE(name, fmt, w, h, ow, oh, lb)                                                      \
  BENCHMARK_CAPTURE(BM_Memcpy, name, fmt, w, h)->Unit(benchmark::kMillisecond);                \
  BENCHMARK_CAPTURE(BM_Reference, name, fmt, w, h, ow, oh, lb)->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_Fused, name, fmt, w, h, ow, oh, lb)->Unit(benchmark::kMillisecond)

CASE(YUY2_1920x1080_to_224, PixelFormat::kYUY2, 1920, 1080, 224, 224, false);
CASE(NV12_1920x1080_to_224, PixelFormat::kNV12, 1920, 1080, 224, 224, false);
CASE(I420_1280x720_to_224, PixelFormat::kI420, 1280, 720, 224, 224, false);
CASE(RGB_1280x720_to_224, PixelFormat::kRGB, 1280, 720, 224, 224, false);
CASE(YUY2_1920x1080_to_640_letterbox, PixelFormat::kYUY2, 1920, 1080, 640, 640, true);
CASE(NV12_1920x1080_to_640_letterbox, PixelFormat::kNV12, 1920, 1080, 640, 640, true);
// Machine-vision cameras: 5 MP and 2.3 MP Bayer (the lattice path), a
// 300x300 Bayer object crop's worth (the bilinear path) and 16-bit mono.
CASE(BayerBG_2448x2048_to_224, PixelFormat::kBayerBGGR, 2448, 2048, 224, 224, false);
CASE(BayerBG_1920x1200_to_224, PixelFormat::kBayerBGGR, 1920, 1200, 224, 224, false);
CASE(BayerBG_300x300_to_224, PixelFormat::kBayerBGGR, 300, 300, 224, 224, false);
CASE(GRAY16_1920x1200_to_224, PixelFormat::kGRAY16_LE, 1920, 1200, 224, 224, false);
BENCHMARK_CAPTURE(BM_Gray16Bits, in_range_1920x1200_to_224, 1920, 1200, 224, 224, 4)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Gray16Bits, in_range_224x224_at_224, 224, 224, 224, 224, 4)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Gray16Bits, saturated_1920x1200_to_224, 1920, 1200, 224, 224, 0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Gray16Bits, saturated_224x224_at_224, 224, 224, 224, 224, 0)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
