// Bayer mosaics and 16-bit mono through the fused preprocessor, against the
// RGB (or luma) image the frame was made from: the mosaic is made here from a
// known RGB image, and the reference is that image cropped to the region the
// preprocessor reads (whole 2x2 cells) and area-resized by cv::resize. All
// differences are in normalised units (ImageNet mean/std: 1 pixel unit is
// 1/(255 * 0.229) = 0.0171 in the worst channel). The content is the
// preprocessing tests' image blurred once more (sigma 2), as a Bayer
// camera's optical low-pass filter blurs it: a mosaic cannot carry colour
// detail finer than its 2x2 cell, so sharper content measures the missing
// information, not the code (docs/performance.md has those figures too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <opencv2/imgproc.hpp>
#include <tuple>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "frames.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

PreprocessOptions imagenet(int w, int h) {
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  PreprocessOptions o;
  o.out_width = w;
  o.out_height = h;
  for (int c = 0; c < 3; ++c) o.alpha[c] = 1.f / (255 * std[c]), o.beta[c] = -mean[c] / std[c];
  return o;
}

float max_diff(const std::vector<float>& ref, const float* got) {
  float worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(ref[i] - got[i]));
  return worst;
}

const PixelFormat kBayerOrders[] = {PixelFormat::kBayerRGGB, PixelFormat::kBayerBGGR,
                                    PixelFormat::kBayerGRBG, PixelFormat::kBayerGBRG};

std::vector<float> run(const FrameView& v, const PreprocessOptions& o,
                       FrameTransform* t = nullptr) {
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  const FrameTransform got = pre.run(v, dst.data<float>());
  if (t) *t = got;
  return {dst.data<float>(), dst.data<float>() + o.slot_values()};
}

struct Shape {
  int width, height, stride, out_w, out_h;
  bool all_border = false;  // every output pixel reaches the region's edge
};

cv::Mat camera_image(int w, int h, unsigned seed) {
  cv::Mat rgb = make_rgb_image(w, h, seed);
  cv::GaussianBlur(rgb, rgb, cv::Size(0, 0), 2.0);
  return rgb;
}

float mean_diff(const std::vector<float>& ref, const float* got) {
  double s = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) s += std::fabs(ref[i] - got[i]);
  return static_cast<float>(s / ref.size());
}

// Bounds (max, mean), normalised units, about 1.2x the worst measured over
// the four orders: shrinking by 2 or more (the lattice path's domain, max
// 0.083 / mean 0.0066 measured), and below that or growing (max 0.19 /
// mean 0.0135, the 40x30 -> 96x64 case).
struct Bound {
  float max, mean;
};
// A region is demosaicked as a frame of its own (edges replicate its own
// samples, not the frame's beyond it): where every output pixel touches an
// edge (a 3x2-cell frame), max 0.176 / mean 0.045 measured.
Bound bound_for(int region_w, int region_h, int out_w, int out_h, bool all_border = false) {
  if (all_border) return {0.21f, 0.055f};
  if (region_w >= 2 * out_w && region_h >= 2 * out_h) return {0.10f, 0.008f};
  return {0.23f, 0.017f};
}

}  // namespace

class BayerMatrix : public testing::TestWithParam<std::tuple<PixelFormat, Shape, Demosaic>> {};

TEST_P(BayerMatrix, MatchesTheAreaResizedSourceRgb) {
  const auto [format, shape, demosaic] = GetParam();
  const cv::Mat rgb = camera_image(shape.width, shape.height, 17);
  const OwnedFrame f = make_frame(rgb, format, shape.stride);
  PreprocessOptions o = imagenet(shape.out_w, shape.out_h);
  o.demosaic = demosaic;
  const std::vector<float> got = run(f.view, o);
  const std::vector<float> ref = reference_preprocess(rgb, format, o);
  const Bound b =
      bound_for(shape.width & ~1, shape.height & ~1, shape.out_w, shape.out_h, shape.all_border);
  const std::string what = std::string(to_string(format)) + " " + std::to_string(shape.width) +
                           "x" + std::to_string(shape.height) + " -> " +
                           std::to_string(shape.out_w) + "x" + std::to_string(shape.out_h);
  EXPECT_LE(max_diff(ref, got.data()), b.max) << what;
  EXPECT_LE(mean_diff(ref, got.data()), b.mean) << what;
}

INSTANTIATE_TEST_SUITE_P(
    EveryOrder, BayerMatrix,
    testing::Combine(testing::ValuesIn(kBayerOrders),
                     testing::Values(Shape{333, 221, 340, 96, 64}, Shape{64, 48, 0, 32, 24},
                                     Shape{1921, 1081, 1924, 224, 224}, Shape{7, 5, 0, 3, 2, true},
                                     Shape{120, 90, 0, 96, 64}, Shape{40, 30, 0, 96, 64}),
                     testing::Values(Demosaic::kAuto, Demosaic::kLattice, Demosaic::kBilinear)));

// kAuto picks cells exactly when both axes shrink by 2 or more.
TEST(Bayer, AutoPicksCellsWhenShrinkingByTwoOrMore) {
  const cv::Mat rgb = make_rgb_image(200, 100, 3);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kBayerGRBG);
  for (auto [w, h, cells] : {std::tuple{100, 50, true},
                             {50, 20, true},
                             {101, 50, false},
                             {100, 51, false},
                             {300, 150, false}}) {
    PreprocessOptions o = imagenet(w, h);
    const std::vector<float> autod = run(f.view, o);
    o.demosaic = cells ? Demosaic::kLattice : Demosaic::kBilinear;
    EXPECT_EQ(autod, run(f.view, o)) << w << "x" << h;
  }
}

// A flat colour comes out exact in every order and path: R and B as they
// are, G the mean of its two sites (the two G of a real sensor differ a
// little; here 100 and 50).
TEST(Bayer, FlatColoursComeOutExact) {
  for (PixelFormat fmt : kBayerOrders)
    for (auto [w, h, ow, oh, d] : {std::tuple{8, 6, 4, 3, Demosaic::kLattice},
                                   {8, 6, 4, 3, Demosaic::kBilinear},
                                   {37, 23, 5, 3, Demosaic::kLattice},
                                   {12, 10, 17, 13, Demosaic::kLattice}}) {
      const PixelLayout& L = layout_of(fmt);
      cv::Mat rgb(h, w, CV_8UC3);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)  // the G in R's row gets 100, the other 50
          rgb.at<cv::Vec3b>(y, x) = {200, static_cast<uchar>((y & 1) == L.c[0].row ? 100 : 50), 30};
      const OwnedFrame f = make_frame(rgb, fmt);
      PreprocessOptions o;
      o.out_width = ow, o.out_height = oh;
      o.demosaic = d;
      const std::vector<float> got = run(f.view, o);
      for (int i = 0; i < ow * oh; ++i) {
        ASSERT_NEAR(got[i * 3], 200.f, 1e-3) << to_string(fmt) << " " << w << "x" << h << " " << i;
        ASSERT_NEAR(got[i * 3 + 1], 75.f, 1e-3)
            << to_string(fmt) << " " << w << "x" << h << " " << i;
        ASSERT_NEAR(got[i * 3 + 2], 30.f, 1e-3)
            << to_string(fmt) << " " << w << "x" << h << " " << i;
      }
    }
}

// Bilinear at the same size, exact on a 2x2 frame: mirrored neighbours make
// every missing colour the cell's own (G: the mean of the two G sites).
TEST(Bayer, BilinearOnOneCellSpreadsItsColours) {
  cv::Mat rgb(2, 2, CV_8UC3);
  rgb.at<cv::Vec3b>(0, 0) = {200, 0, 0};  // R site of RGGB
  rgb.at<cv::Vec3b>(0, 1) = {0, 101, 0};
  rgb.at<cv::Vec3b>(1, 0) = {0, 50, 0};
  rgb.at<cv::Vec3b>(1, 1) = {0, 0, 30};
  const OwnedFrame f = make_frame(rgb, PixelFormat::kBayerRGGB);
  PreprocessOptions o;
  o.out_width = o.out_height = 2;
  const std::vector<float> got = run(f.view, o);
  // G at R and B sites: (101 + 101 + 50 + 50 + 2) >> 2 = 76.
  const float want[4][3] = {{200, 76, 30}, {200, 101, 30}, {200, 50, 30}, {200, 76, 30}};
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(got[i * 3 + c], want[i][c]) << i << "," << c;
}

// Odd corners snap to whole cells: origin down, far edge up to even, within
// the frame's whole cells; the transform says so and the pixels match the
// source RGB over that region.
TEST(Bayer, CropsSnapToWholeCells) {
  const cv::Mat rgb = camera_image(97, 75, 4);  // odd: last column and row unused
  for (PixelFormat fmt : kBayerOrders) {
    const OwnedFrame f = make_frame(rgb, fmt);
    struct Case {
      Crop crop;
      int x0, y0, x1, y1;
    };
    for (const Case& c :
         {Case{{13, 7, 41, 29}, 12, 6, 54, 36}, Case{{0, 0, 0, 0}, 0, 0, 96, 74},
          Case{{61, 49, 100, 100}, 60, 48, 96, 74}, Case{{2, 2, 4, 4}, 2, 2, 6, 6}}) {
      PreprocessOptions o = imagenet(16, 12);
      o.crop = c.crop;
      FrameTransform t;
      const std::vector<float> got = run(f.view, o, &t);
      EXPECT_DOUBLE_EQ(t.scale_x, 16.0 / (c.x1 - c.x0)) << to_string(fmt) << " " << c.crop.x;
      EXPECT_DOUBLE_EQ(t.scale_y, 12.0 / (c.y1 - c.y0)) << to_string(fmt) << " " << c.crop.x;
      EXPECT_NEAR(c.x0 * t.scale_x + t.offset_x, 0.0, 1e-9);
      EXPECT_NEAR(c.y0 * t.scale_y + t.offset_y, 0.0, 1e-9);
      // Small regions inside the frame: their edges replicate, the
      // reference sees the frame beyond them.
      const Bound b = bound_for(c.x1 - c.x0, c.y1 - c.y0, 16, 12, c.x1 - c.x0 < 50);
      EXPECT_LE(max_diff(reference_preprocess(rgb, fmt, o), got.data()), b.max)
          << to_string(fmt) << " crop " << c.crop.x << "," << c.crop.y;
    }
  }
}

// The same region given as a crop of the frame, or cut out by hand as a
// frame of its own: the same bits (roi-list relies on it).
TEST(Bayer, RegionEqualsTheRegionAsAFrame) {
  const cv::Mat rgb = make_rgb_image(90, 70, 6);
  for (PixelFormat fmt : kBayerOrders)
    for (Demosaic d : {Demosaic::kLattice, Demosaic::kBilinear}) {
      const OwnedFrame f = make_frame(rgb, fmt);
      PreprocessOptions o = imagenet(12, 10);
      o.demosaic = d;
      o.crop = {20, 10, 44, 40};
      const std::vector<float> cropped = run(f.view, o);
      FrameView part = f.view;
      part.planes[0] += 10 * f.view.strides[0] + 20;
      part.width = 44, part.height = 40;
      o.crop = {};
      EXPECT_EQ(cropped, run(part, o)) << to_string(fmt);
    }
}

// Row bands (preprocess-on=inference-threads) write exactly one run's bytes,
// in both demosaic paths (the bilinear one demosaics rows on demand, so a
// band starting mid-frame must find the rows it needs).
TEST(Bayer, RowBandsWriteExactlyWhatOneRunWrites) {
  const cv::Mat rgb = make_rgb_image(121, 67, 5);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kBayerBGGR);
  for (auto [w, h] : {std::pair{40, 29}, std::pair{100, 50}})
    for (bool letterbox : {false, true}) {
      PreprocessOptions o = imagenet(w, h);
      o.keep_aspect_ratio = letterbox;
      Preprocessor whole(o);
      AlignedBuffer ref(o.slot_bytes());
      whole.run_band(f.view, nullptr, ref.data(), 0, 1);
      for (int bands : {2, 3, 7}) {
        AlignedBuffer got(o.slot_bytes());
        std::memset(got.data(), 0xAB, o.slot_bytes());
        for (int b = 0; b < bands; ++b)
          Preprocessor(o).run_band(f.view, nullptr, got.data(), b, bands);
        EXPECT_EQ(std::memcmp(got.data(), ref.data(), o.slot_bytes()), 0)
            << w << "x" << h << (letterbox ? " letterbox" : "") << " bands " << bands;
      }
    }
}

TEST(Bayer, GrayModelAndByteOutput) {
  const cv::Mat rgb = camera_image(160, 120, 9);
  const OwnedFrame f = make_frame(rgb, PixelFormat::kBayerRGGB);
  PreprocessOptions o;
  o.out_width = 40, o.out_height = 30;
  o.order = ChannelOrder::kGray;
  o.alpha[0] = 1.f / 255;
  const std::vector<float> gray = run(f.view, o);
  EXPECT_LE(max_diff(reference_preprocess(rgb, PixelFormat::kBayerRGGB, o), gray.data()), 0.02f);
  o.order = ChannelOrder::kBGR;
  o.alpha = {1.f, 1.f, 1.f};
  o.output = OutputType::kUInt8;
  Preprocessor pre(o);
  std::vector<std::uint8_t> bytes(o.slot_values());
  pre.run(f.view, bytes.data());
  o.output = OutputType::kFloat32;
  const std::vector<float> floats = run(f.view, o);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], static_cast<int>(floats[i] + 0.5f)) << i;
}

// ---- GRAY16_LE ----------------------------------------------------------

namespace {
OwnedFrame gray16(int w, int h, int stride, const std::function<int(int, int)>& value) {
  return make_gray16(w, h, value, stride);
}
}  // namespace

// At the default 16 bits, GRAY16 of luma x 257 equals GRAY8 of the same
// luma; odd sizes, padded strides, crops and every channel order.
TEST(Gray16, MatchesGray8OfTheSameImage) {
  for (auto [w, h, stride] : {std::tuple{333, 221, 700}, {7, 5, 0}, {1921, 1081, 3844}}) {
    const cv::Mat rgb = make_rgb_image(w, h, 12);
    const OwnedFrame f16 = make_frame(rgb, PixelFormat::kGRAY16_LE, stride);
    const OwnedFrame f8 = make_frame(rgb, PixelFormat::kGRAY8);
    for (auto order : {ChannelOrder::kRGB, ChannelOrder::kGray})
      for (Crop crop : {Crop{}, Crop{3, 1, 4, 3}}) {
        PreprocessOptions o = imagenet(96, 64);
        o.order = order;
        o.crop = crop;
        const std::vector<float> a = run(f16.view, o), b = run(f8.view, o);
        // GRAY8 rounds the luma to whole pixel units, GRAY16 keeps 1/257 of one.
        EXPECT_LE(max_diff(b, a.data()), 0.5f / (255 * 0.224f)) << w << "x" << h;
        EXPECT_LE(max_diff(reference_preprocess(f16.view, o), a.data()), 0.5f / (255 * 0.224f))
            << w << "x" << h << " crop " << crop.width;
      }
  }
}

// input_bits: a 12-bit camera's 4095 is full scale (255 units); values past
// it (wrong setting, stray high bits) clamp to 255 units.
TEST(Gray16, InputBitsSetsFullScale) {
  const OwnedFrame f = gray16(4, 2, 8, [](int x, int) {
    return x == 0 ? 0 : x == 1 ? 1365 : x == 2 ? 4095 : 60000;
  });
  PreprocessOptions o;
  o.out_width = 4, o.out_height = 1;
  o.order = ChannelOrder::kGray;
  for (auto [bits, want1, want2, want3] :
       {std::tuple{12, 1365 * 255.f / 4095, 255.f, 255.f},
        {16, 1365 * 255.f / 65535, 4095 * 255.f / 65535, 60000 * 255.f / 65535},
        {10, 255.f, 255.f, 255.f}}) {
    o.input_bits = bits;
    const std::vector<float> got = run(f.view, o);
    EXPECT_FLOAT_EQ(got[0], 0.f) << bits;
    EXPECT_NEAR(got[1], want1, 1e-3) << bits;
    EXPECT_NEAR(got[2], want2, 1e-3) << bits;
    EXPECT_NEAR(got[3], want3, 1e-3) << bits;
  }
}

// ---- negative cases -------------------------------------------------------

TEST(BayerErrors, FrameSmallerThanOneCell) {
  const OwnedFrame f = make_frame(make_rgb_image(1, 9, 1), PixelFormat::kBayerRGGB);
  PreprocessOptions o = imagenet(4, 4);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  try {
    pre.run(f.view, dst.data<float>());
    ADD_FAILURE() << "1x9 Bayer frame accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStreamData);
    EXPECT_NE(std::string(e.what()).find("rggb Bayer frame 1x9 is smaller than one 2x2 cell"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(pre.check(f.view, nullptr), Error);
}

TEST(BayerErrors, CropOnlyOnTheHalfCellOfAnOddFrame) {
  // Column 96 of a 97-wide frame is half a cell: nothing to read there.
  const OwnedFrame f = make_frame(make_rgb_image(97, 75, 1), PixelFormat::kBayerGBRG);
  PreprocessOptions o = imagenet(4, 4);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  const Crop c{96, 10, 1, 20};
  try {
    pre.run(f.view, c, dst.data<float>());
    ADD_FAILURE() << "crop on the half cell accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

TEST(BayerErrors, ShortStrideAndMissingPlane) {
  OwnedFrame f = make_frame(make_rgb_image(64, 8, 1), PixelFormat::kBayerRGGB);
  PreprocessOptions o = imagenet(4, 4);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  f.view.strides[0] = 63;
  EXPECT_THROW(pre.run(f.view, dst.data<float>()), Error);
  f.view.strides[0] = 64;
  f.view.planes[0] = nullptr;
  EXPECT_THROW(pre.run(f.view, dst.data<float>()), Error);
}

TEST(Gray16Errors, InputBitsOutOfRangeAndShortStride) {
  for (int bits : {0, 7, 17, -1}) {
    PreprocessOptions o = imagenet(4, 4);
    o.input_bits = bits;
    try {
      Preprocessor pre(o);
      ADD_FAILURE() << bits;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("input-bits"), std::string::npos);
    }
  }
  // 10 pixels of 2 bytes need a 20-byte stride.
  OwnedFrame f = gray16(10, 4, 20, [](int, int) { return 7; });
  f.view.strides[0] = 19;
  PreprocessOptions o = imagenet(4, 4);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  EXPECT_THROW(pre.run(f.view, dst.data<float>()), Error);
}
