// Deskewed crops (preprocess/deskew.h) on constructed frames whose upright
// crop is known exactly: quarter turns move pixels without changing them,
// and a linear ramp (R = x, G = y) sampled bilinearly gives back the very
// frame coordinates each output pixel was taken from -- which pins the
// angle's direction (clockwise in image coordinates), the centre and the
// scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "frames.h"
#include "preprocess/preprocess.h"
#include "stream/regions.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

constexpr double kPi = RotatedBox::kPi;

PreprocessOptions raw(int w, int h, OutputType out = OutputType::kFloat32) {
  PreprocessOptions o;
  o.out_width = w;
  o.out_height = h;
  o.output = out;  // alpha 1, beta 0: values in pixel units
  return o;
}

Crop rotated_crop(const RotatedBox& b, int frame_w, int frame_h) {
  const Box bb = b.bounds();
  const int x0 = std::max(0, static_cast<int>(std::floor(bb.x_min)));
  const int y0 = std::max(0, static_cast<int>(std::floor(bb.y_min)));
  const int x1 = std::min(frame_w, static_cast<int>(std::ceil(bb.x_max)));
  const int y1 = std::min(frame_h, static_cast<int>(std::ceil(bb.y_max)));
  Crop c(x0, y0, x1 - x0, y1 - y0);
  c.rotated = b;
  return c;
}

// R = x, G = y, B = 128 (x, y < 256).
cv::Mat ramp(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(x, y, 128);
  return m;
}

cv::Mat constant(int w, int h, int r, int g, int b) {
  return cv::Mat(h, w, CV_8UC3, cv::Scalar(r, g, b));
}

// The frame point output pixel (u, v) of a w x h crop samples (n = 1).
std::pair<double, double> source_point(const RotatedBox& b, int w, int h, double u, double v) {
  const double a = b.angle * kPi / 180;
  const double bu = ((u + 0.5) / w - 0.5) * b.width, bv = ((v + 0.5) / h - 0.5) * b.height;
  return {b.cx + bu * std::cos(a) - bv * std::sin(a), b.cy + bu * std::sin(a) + bv * std::cos(a)};
}

}  // namespace

TEST(Deskew, QuarterTurnsMovePixelsExactly) {
  const cv::Mat rgb = make_rgb_image(64, 48, 7);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
  // cx, cy integral, sizes even: every sample lands on a pixel centre.
  struct Case {
    double angle;
    int (*x)(int u, int v);
    int (*y)(int u, int v);
  };
  const Case cases[] = {
      {0, [](int u, int) { return 20 + u; }, [](int, int v) { return 15 + v; }},
      {90, [](int, int v) { return 34 - v; }, [](int u, int) { return 10 + u; }},
      {-90, [](int, int v) { return 25 + v; }, [](int u, int) { return 29 - u; }},
  };
  for (const Case& c : cases) {
    const RotatedBox b{30, 20, 20, 10, c.angle};
    Preprocessor pre(raw(20, 10, OutputType::kUInt8));
    std::vector<std::uint8_t> out(20 * 10 * 3);
    pre.run(f.view, rotated_crop(b, 64, 48), out.data());
    for (int v = 0; v < 10; ++v)
      for (int u = 0; u < 20; ++u) {
        const cv::Vec3b want = rgb.at<cv::Vec3b>(c.y(u, v), c.x(u, v));
        for (int k = 0; k < 3; ++k)
          ASSERT_EQ(out[(v * 20 + u) * 3 + k], want[k])
              << "angle " << c.angle << " u " << u << " v " << v << " channel " << k;
      }
  }
}

TEST(Deskew, RampGivesBackTheSampledCoordinatesClockwise) {
  const OwnedFrame f = make_frame(ramp(256, 256), PixelFormat::kBGRx);
  const RotatedBox b{128.3, 120.7, 60, 30, 30};
  Preprocessor pre(raw(60, 30));
  std::vector<float> out(60 * 30 * 3);
  pre.run(f.view, rotated_crop(b, 256, 256), out.data());
  for (int v = 0; v < 30; ++v)
    for (int u = 0; u < 60; ++u) {
      const auto [x, y] = source_point(b, 60, 30, u, v);
      ASSERT_NEAR(out[(v * 60 + u) * 3 + 0], x - 0.5, 2e-3) << u << "," << v;
      ASSERT_NEAR(out[(v * 60 + u) * 3 + 1], y - 0.5, 2e-3) << u << "," << v;
      ASSERT_NEAR(out[(v * 60 + u) * 3 + 2], 128, 1e-4);
    }
  // Clockwise: along the crop's rows the frame's y grows (sin 30 > 0).
  EXPECT_NEAR(out[(15 * 60 + 59) * 3 + 1] - out[(15 * 60 + 0) * 3 + 1], 59 * 0.5, 2e-3);
}

TEST(Deskew, ShrinkingAveragesSubsamples) {
  // Half size: 2 x 2 samples per pixel; the mean of a ramp's samples is the
  // ramp at the pixel's centre.
  const OwnedFrame f = make_frame(ramp(256, 256), PixelFormat::kRGB);
  const RotatedBox b{128, 128, 60, 30, -20};
  Preprocessor pre(raw(30, 15));
  std::vector<float> out(30 * 15 * 3);
  pre.run(f.view, rotated_crop(b, 256, 256), out.data());
  for (int v = 0; v < 15; ++v)
    for (int u = 0; u < 30; ++u) {
      const auto [x, y] = source_point(b, 30, 15, u, v);
      ASSERT_NEAR(out[(v * 30 + u) * 3 + 0], x - 0.5, 2e-3);
      ASSERT_NEAR(out[(v * 30 + u) * 3 + 1], y - 0.5, 2e-3);
    }
}

TEST(Deskew, EveryFormatGivesTheAxisAlignedColour) {
  // A flat colour through each format's own grids (YUV chroma, Bayer
  // lattices, packed 4:2:2) equals the axis-aligned crop's value.
  const cv::Mat rgb = constant(80, 60, 200, 100, 50);
  for (PixelFormat fmt :
       {PixelFormat::kYUY2, PixelFormat::kUYVY, PixelFormat::kNV12, PixelFormat::kNV21,
        PixelFormat::kI420, PixelFormat::kYV12, PixelFormat::kRGBA, PixelFormat::kGRAY8,
        PixelFormat::kBayerRGGB, PixelFormat::kBayerGBRG}) {
    const OwnedFrame f = make_frame(rgb, fmt);
    Preprocessor pre(raw(16, 8));
    std::vector<float> flat(16 * 8 * 3), turned(16 * 8 * 3);
    pre.run(f.view, Crop(10, 10, 40, 20), flat.data());
    pre.run(f.view, rotated_crop({40, 30, 40, 20, 37}, 80, 60), turned.data());
    for (std::size_t i = 0; i < flat.size(); ++i)
      ASSERT_NEAR(turned[i], flat[i], 1e-3) << to_string(fmt) << " value " << i;
  }
}

TEST(Deskew, Gray16ScalesByInputBits) {
  const OwnedFrame f = make_gray16(40, 30, [](int x, int) { return x < 20 ? 2048 : 4095; });
  PreprocessOptions o = raw(4, 2);
  o.order = ChannelOrder::kGray;
  o.input_bits = 12;
  Preprocessor pre(o);
  std::vector<float> out(8);
  pre.run(f.view, rotated_crop({10, 15, 8, 4, 90}, 40, 30), out.data());
  for (float v : out) EXPECT_NEAR(v, 2048 * 255.0 / 4095, 1e-3);
}

TEST(Deskew, LetterboxPadsAroundTheUprightBox) {
  const OwnedFrame f = make_frame(constant(80, 60, 10, 20, 30), PixelFormat::kRGB);
  PreprocessOptions o = raw(32, 32);
  o.keep_aspect_ratio = true;
  o.pad_value = 114;
  Preprocessor pre(o);
  std::vector<float> out(32 * 32 * 3);
  pre.run(f.view, rotated_crop({40, 30, 40, 20, 90}, 80, 60), out.data());
  // 40 x 20 fits as 32 x 16, rows 8..23.
  for (int y = 0; y < 32; ++y) {
    const bool pad = y < 8 || y >= 24;
    EXPECT_NEAR(out[(y * 32 + 5) * 3 + 0], pad ? 114 : 10, 1e-4) << y;
    EXPECT_NEAR(out[(y * 32 + 5) * 3 + 2], pad ? 114 : 30, 1e-4) << y;
  }
}

TEST(Deskew, RowBandsWriteWhatOneRunWrites) {
  const OwnedFrame f = make_frame(make_rgb_image(120, 90, 3), PixelFormat::kNV12);
  const Crop c = rotated_crop({60, 45, 70, 30, 25}, 120, 90);
  Preprocessor whole(raw(35, 21));
  std::vector<float> one(35 * 21 * 3), banded(35 * 21 * 3);
  whole.run(f.view, c, one.data());
  for (int band = 0; band < 3; ++band) {
    Preprocessor part(raw(35, 21));
    part.run_band(f.view, &c, banded.data(), band, 3);
  }
  EXPECT_EQ(one, banded);
}

TEST(Deskew, PastTheFrameTakesTheNearestEdge) {
  const OwnedFrame f = make_frame(ramp(64, 64), PixelFormat::kRGB);
  Preprocessor pre(raw(20, 20));
  std::vector<float> out(20 * 20 * 3);
  pre.run(f.view, rotated_crop({2, 2, 20, 20, 0}, 64, 64), out.data());
  EXPECT_NEAR(out[0], 0, 1e-4);                    // (-7.5, -7.5) -> pixel 0
  EXPECT_NEAR(out[(19 * 20 + 19) * 3], 11, 1e-4);  // 11.5 - 0.5
}

TEST(DeskewErrors, EmptyOrNonFiniteBoxesAreRefused) {
  const OwnedFrame f = make_frame(ramp(64, 64), PixelFormat::kRGB);
  Preprocessor pre(raw(8, 8));
  std::vector<float> out(8 * 8 * 3);
  for (const RotatedBox& b :
       {RotatedBox{10, 10, 0, 5, 0}, RotatedBox{10, 10, 5, -1, 0},
        RotatedBox{10, 10, 5, 5, std::nan("")}, RotatedBox{std::nan(""), 10, 5, 5, 0},
        RotatedBox{10, 10, 5, std::numeric_limits<double>::infinity(), 0}}) {
    Crop c(0, 0, 20, 20);
    c.rotated = b;
    EXPECT_THROW(pre.run(f.view, c, out.data()), Error);
  }
}

TEST(DeskewRegions, RotatedRegionsAreCutAlongTheirBox) {
  RegionOfInterest roi;
  roi.x = 50, roi.y = 40, roi.width = 30, roi.height = 30;
  roi.label = "bracket";
  roi.rotated = RotatedBox{65, 55, 30, 10, 45};
  RegionOptions o;
  o.padding = 0.1;
  RegionResult r = plan_region(roi, o, 200, 100);
  ASSERT_EQ(r.fate, RegionFate::kInferred);
  ASSERT_TRUE(r.box.rotated.has_value());
  EXPECT_DOUBLE_EQ(r.box.rotated->width, 36);
  EXPECT_DOUBLE_EQ(r.box.rotated->height, 12);
  EXPECT_DOUBLE_EQ(r.box.rotated->angle, 45);
  // The pixel box: the padded rotated box's bounds, outwards.
  const double half = (36 + 12) * std::sqrt(0.5) / 2;
  EXPECT_EQ(r.box.x, static_cast<int>(std::floor(65 - half)));
  EXPECT_EQ(r.box.x + r.box.width, static_cast<int>(std::ceil(65 + half)));
  o.deskew = false;
  r = plan_region(roi, o, 200, 100);
  EXPECT_FALSE(r.box.rotated.has_value());
  EXPECT_EQ(r.box.x, 47);  // 50 - 3
  // Unusable rotated boxes fall back to the axis-aligned crop.
  o.deskew = true;
  roi.rotated->width = std::nan("");
  r = plan_region(roi, o, 200, 100);
  EXPECT_EQ(r.fate, RegionFate::kInferred);
  EXPECT_FALSE(r.box.rotated.has_value());
}
