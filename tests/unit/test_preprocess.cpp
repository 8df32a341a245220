#include <gtest/gtest.h>

#include <cmath>
#include <opencv2/imgproc.hpp>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "frames.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

constexpr float kAlpha[3] = {1.f / (255 * 0.229f), 1.f / (255 * 0.224f), 1.f / (255 * 0.225f)};
constexpr float kBeta[3] = {-0.485f / 0.229f, -0.456f / 0.224f, -0.406f / 0.225f};

PreprocessOptions imagenet(int w, int h, ChannelOrder order = ChannelOrder::kRGB) {
  PreprocessOptions o;
  o.out_width = w;
  o.out_height = h;
  o.order = order;
  for (int c = 0; c < 3; ++c) {
    const int src = order == ChannelOrder::kBGR ? 2 - c : c;
    o.alpha[c] = kAlpha[src];
    o.beta[c] = kBeta[src];
  }
  return o;
}

// Largest difference in 0..255 pixel units (un-normalised).
float max_pixel_diff(const std::vector<float>& a, const float* b, const PreprocessOptions& o) {
  float worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int c = static_cast<int>(i % 3);
    worst = std::max(worst, std::fabs(a[i] - b[i]) / o.alpha[c]);
  }
  return worst;
}

struct Case {
  PixelFormat format;
  int width, height, stride;
  float bound;  // pixel units
};

}  // namespace

class PreprocessVsReference : public testing::TestWithParam<Case> {};

TEST_P(PreprocessVsReference, WithinBound) {
  const Case c = GetParam();
  const cv::Mat rgb = make_rgb_image(c.width, c.height, 7);
  const OwnedFrame f = make_frame(rgb, c.format, c.stride);
  for (auto order : {ChannelOrder::kRGB, ChannelOrder::kBGR}) {
    const PreprocessOptions o = imagenet(64, 48, order);
    Preprocessor pre(o);
    AlignedBuffer dst(o.slot_floats());
    const auto t = pre.run(f.view, dst.data());
    EXPECT_DOUBLE_EQ(t.scale_x, 64.0 / c.width);
    EXPECT_DOUBLE_EQ(t.scale_y, 48.0 / c.height);
    const auto ref = reference_preprocess(f, 64, 48, cv::INTER_AREA, order == ChannelOrder::kRGB,
                                          o.alpha.data(), o.beta.data());
    EXPECT_LE(max_pixel_diff(ref, dst.data(), o), c.bound)
        << to_string(c.format) << " " << c.width << "x" << c.height << " order "
        << to_string(order);
  }
}

// RGB-family paths resize the same bytes as the reference: ≤ 1/255.
// Packed 4:2:2 converts colour after resizing. Against a float reference the
// difference is ≤ 1.55/255 (clamping of out-of-gamut pixels at chroma edges
// does not commute with averaging); the uint8 reference chain adds up to
// 1/255 of its own rounding, hence 2.5/255 here.
INSTANTIATE_TEST_SUITE_P(Formats, PreprocessVsReference,
                         testing::Values(Case{PixelFormat::kRGB, 640, 480, 0, 1.f},
                                         Case{PixelFormat::kRGB, 321, 241, 1000, 1.f},
                                         Case{PixelFormat::kBGR, 640, 480, 0, 1.f},
                                         Case{PixelFormat::kRGBx, 640, 480, 0, 1.f},
                                         Case{PixelFormat::kBGRx, 333, 222, 1400, 1.f},
                                         Case{PixelFormat::kxRGB, 128, 96, 0, 1.f},
                                         Case{PixelFormat::kABGR, 128, 96, 0, 1.f},
                                         Case{PixelFormat::kRGBA, 100, 60, 0, 1.f},
                                         Case{PixelFormat::kGRAY8, 640, 480, 0, 1.f},
                                         Case{PixelFormat::kGRAY8, 97, 51, 128, 1.f},
                                         Case{PixelFormat::kYUY2, 640, 480, 0, 2.5f},
                                         Case{PixelFormat::kYUY2, 1280, 720, 2600, 2.5f},
                                         Case{PixelFormat::kUYVY, 640, 480, 0, 2.5f}));

TEST(Preprocess, ExactValuesWithoutResize) {
  cv::Mat rgb(2, 3, CV_8UC3);
  for (int i = 0; i < 18; ++i) rgb.data[i] = static_cast<uchar>(i * 14);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kBGRx);
  PreprocessOptions o;
  o.out_width = 3;
  o.out_height = 2;
  o.alpha = {1.f, 2.f, 3.f};
  o.beta = {0.f, -1.f, 0.5f};
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_floats());
  pre.run(f.view, dst.data());
  for (int i = 0; i < 6; ++i)
    for (int c = 0; c < 3; ++c)
      EXPECT_FLOAT_EQ(dst.data()[i * 3 + c], rgb.data[i * 3 + c] * o.alpha[c] + o.beta[c])
          << i << "," << c;
}

TEST(Preprocess, GrayModelFromRgbUsesBt601Luma) {
  cv::Mat rgb(1, 1, CV_8UC3, cv::Scalar(200, 100, 50));
  const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
  PreprocessOptions o;
  o.out_width = o.out_height = 1;
  o.order = ChannelOrder::kGray;
  Preprocessor pre(o);
  float v = 0;
  pre.run(f.view, &v);
  EXPECT_NEAR(v, 0.299f * 200 + 0.587f * 100 + 0.114f * 50, 1e-3);
}

TEST(Preprocess, LetterboxPadsAndRecordsTransform) {
  const cv::Mat rgb = make_rgb_image(200, 100, 3);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
  PreprocessOptions o;
  o.out_width = 64;
  o.out_height = 64;
  o.keep_aspect_ratio = true;
  o.pad_value = 114;
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_floats());
  const auto t = pre.run(f.view, dst.data());
  EXPECT_DOUBLE_EQ(t.scale_x, 64.0 / 200);
  EXPECT_DOUBLE_EQ(t.scale_y, 32.0 / 100);
  EXPECT_DOUBLE_EQ(t.offset_x, 0);
  EXPECT_DOUBLE_EQ(t.offset_y, 16);
  // Rows 0..15 and 48..63 are padding; row 16.. holds the resized image.
  for (int y : {0, 15, 48, 63})
    for (int x : {0, 31, 63})
      EXPECT_FLOAT_EQ(dst.data()[(y * 64 + x) * 3 + 1], 114.f) << y << "," << x;
  cv::Mat small;
  cv::resize(rgb, small, cv::Size(64, 32), 0, 0, cv::INTER_AREA);
  EXPECT_FLOAT_EQ(dst.data()[(16 * 64 + 5) * 3 + 0], small.at<cv::Vec3b>(0, 5)[0]);
  EXPECT_FLOAT_EQ(dst.data()[(47 * 64 + 63) * 3 + 2], small.at<cv::Vec3b>(31, 63)[2]);
}

TEST(Preprocess, UpscalesSmallFramesAndOnePixelWide) {
  for (auto [w, h] : {std::pair{1, 37}, std::pair{5, 3}}) {
    const cv::Mat rgb = make_rgb_image(w, h, 11);
    const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
    const PreprocessOptions o = imagenet(16, 16);
    Preprocessor pre(o);
    AlignedBuffer dst(o.slot_floats());
    pre.run(f.view, dst.data());
    const auto ref =
        reference_preprocess(f, 16, 16, cv::INTER_AREA, true, o.alpha.data(), o.beta.data());
    EXPECT_LE(max_pixel_diff(ref, dst.data(), o), 1.f) << w << "x" << h;
  }
}

TEST(Preprocess, ResizeMethodsMatchOpenCv) {
  const cv::Mat rgb = make_rgb_image(300, 200, 5);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
  for (auto [m, cvm] : {std::pair{ResizeMethod::kLinear, cv::INTER_LINEAR},
                        std::pair{ResizeMethod::kNearest, cv::INTER_NEAREST}}) {
    PreprocessOptions o = imagenet(50, 40);
    o.method = m;
    Preprocessor pre(o);
    AlignedBuffer dst(o.slot_floats());
    pre.run(f.view, dst.data());
    const auto ref = reference_preprocess(f, 50, 40, cvm, true, o.alpha.data(), o.beta.data());
    EXPECT_LE(max_pixel_diff(ref, dst.data(), o), 1e-3f) << to_string(m);
  }
}

TEST(AlignedBuffer, IsAlignedAndZeroed) {
  for (std::size_t n : {1u, 3u, 150528u}) {
    AlignedBuffer b(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    EXPECT_EQ(b.size(), n);
    for (std::size_t i = 0; i < n; i += 97) EXPECT_EQ(b.data()[i], 0.f);
  }
}

// ---- negative cases -------------------------------------------------------

TEST(PreprocessErrors, RejectsBadFramesAndOptions) {
  PreprocessOptions o = imagenet(8, 8);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_floats());
  FrameView empty;
  EXPECT_THROW(pre.run(empty, dst.data()), Error);
  const OwnedFrame f = make_frame(make_rgb_image(10, 10, 1), PixelFormat::kRGB);
  FrameView short_stride = f.view;
  short_stride.strides[0] = 10;  // < 30 bytes per row
  EXPECT_THROW(pre.run(short_stride, dst.data()), Error);
  EXPECT_THROW(pre.run(f.view, nullptr), Error);
  PreprocessOptions bad = o;
  bad.out_width = 0;
  EXPECT_THROW(Preprocessor{bad}, Error);
  bad = o;
  bad.pad_value = 300;
  EXPECT_THROW(Preprocessor{bad}, Error);
}
