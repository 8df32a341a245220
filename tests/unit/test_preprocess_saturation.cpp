// GRAY16_LE samples above input-bits: which model input pixels the
// preprocessing clamps and counts (run, run with a crop, run_band), and when
// the element is told to warn (SaturationReport).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "frames.h"
#include "preprocess/preprocess.h"
#include "preprocess/saturation.h"

using namespace torchinfer;
using namespace torchinfer::test;
using namespace std::chrono_literals;

namespace {

OwnedFrame gray16(int w, int h, const std::function<int(int, int)>& value) {
  return make_gray16(w, h, value);
}

PreprocessOptions options(int w, int h, int bits, ChannelOrder order = ChannelOrder::kGray) {
  PreprocessOptions o;
  o.out_width = w, o.out_height = h;
  o.order = order;
  o.alpha = {1.f, 1.f, 1.f};
  o.input_bits = bits;
  return o;
}

// The run's saturation, and the model input (pixel units) in `out`.
Saturation run(const FrameView& v, const PreprocessOptions& o, std::vector<float>* out = nullptr) {
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  if (o.output == OutputType::kUInt8)
    pre.run(v, dst.data<std::uint8_t>());
  else
    pre.run(v, dst.data<float>());
  if (out) out->assign(dst.data<float>(), dst.data<float>() + o.slot_values());
  return pre.saturation();
}

// Hot samples: 4096 + 100 * i at every 7th position (37 of the 64 x 4 grid
// below), the rest at most 4095.
int hot_or_in_range(int x, int y) {
  const int i = y * 64 + x;
  return i % 7 == 0 ? 4096 + 100 * (i / 7) : (i * 37) % 4096;
}

}  // namespace

// At the model's size each sample is one model input pixel: exactly the
// samples above 4095 count, whatever the channels and output type; 4095
// itself is full scale, not clamped.
TEST(Gray16Saturation, CountsEachSampleAboveFullScaleAtTheModelsSize) {
  const OwnedFrame f = gray16(64, 4, hot_or_in_range);
  for (ChannelOrder order : {ChannelOrder::kGray, ChannelOrder::kRGB})
    for (OutputType type : {OutputType::kFloat32, OutputType::kUInt8}) {
      PreprocessOptions o = options(64, 4, 12, order);
      o.output = type;
      const Saturation s = run(f.view, o);
      EXPECT_EQ(s.pixels, 37u);
      EXPECT_EQ(s.peak, 4096u + 100 * 36);
    }
  // Every sample at 4095: nothing clamps.
  EXPECT_FALSE(run(gray16(64, 4, [](int, int) { return 4095; }).view, options(64, 4, 12)).any());
}

// Resizing: a model input pixel counts when the mean of the samples it
// covers (rounded) exceeds full scale, i.e. when it is clamped; a hot
// sample averaged below full scale is passed on, not clamped, not counted.
TEST(Gray16Saturation, ResizedPixelsCountWhenTheirMeanExceedsFullScale) {
  // 2x2 blocks -> one pixel each (area).
  const int blocks[6][4] = {
      {4095, 4095, 4095, 4095},      // full scale: no
      {5000, 3000, 4000, 4000},      // one hot sample, mean 4000: no
      {4095, 4095, 4095, 4096},      // mean 4095.25 rounds to full scale: no
      {4095, 4096, 4096, 4095},      // mean 4095.5 rounds to 4096: yes
      {4096, 4096, 4096, 4097},      // mean 4096.25: yes
      {65535, 65535, 65535, 65535},  // yes, the peak
  };
  const OwnedFrame f = gray16(12, 2, [&](int x, int y) { return blocks[x / 2][y * 2 + x % 2]; });
  std::vector<float> got;
  const Saturation s = run(f.view, options(6, 1, 12), &got);
  EXPECT_EQ(s.pixels, 3u);
  EXPECT_EQ(s.peak, 65535u);
  EXPECT_NEAR(got[1], 4000 * 255.f / 4095, 1e-3) << "passed on, not clamped";
  for (int i : {3, 4, 5}) EXPECT_FLOAT_EQ(got[i], 255.f) << i;
}

// A crop counts only its region, given to run() or set in the options.
TEST(Gray16Saturation, CropCountsOnlyTheRegion) {
  // Hot samples in column 10 (all 40 rows) and row 30 (all 64 columns).
  const OwnedFrame f =
      gray16(64, 40, [](int x, int y) { return x == 10 || y == 30 ? 9000 : 2000; });
  const Crop region{8, 20, 16, 16};  // column 10: 16 samples, row 30: 16, one shared
  PreprocessOptions o = options(16, 16, 12);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  pre.run(f.view, region, dst.data<float>());
  EXPECT_EQ(pre.saturation().pixels, 31u);
  EXPECT_EQ(pre.saturation().peak, 9000u);
  pre.run(f.view, Crop{30, 0, 16, 16}, dst.data<float>());  // neither
  EXPECT_FALSE(pre.saturation().any());
  o.crop = region;
  EXPECT_EQ(run(f.view, o).pixels, 31u);
}

// Row bands on separate Preprocessors and threads add up to the whole
// frame's count, for every split (resized, letterboxed).
TEST(Gray16Saturation, BandsOnThreadsAddUpToTheWholeFrame) {
  const OwnedFrame f =
      gray16(1000, 700, [](int x, int y) { return (x * 7919 + y * 104729) % 8192; });
  for (bool letterbox : {false, true}) {
    PreprocessOptions o = options(224, 224, 12);
    o.keep_aspect_ratio = letterbox;
    const Saturation whole = run(f.view, o);
    ASSERT_GT(whole.pixels, 1000u);
    ASSERT_LT(whole.pixels, 224u * 224);
    for (int bands : {1, 2, 3, 7}) {
      std::vector<Saturation> got(bands);
      std::vector<std::thread> team;
      AlignedBuffer dst(o.slot_bytes());
      for (int b = 0; b < bands; ++b)
        team.emplace_back([&, b] {
          Preprocessor pre(o);
          pre.run_band(f.view, nullptr, dst.data(), b, bands);
          got[b] = pre.saturation();
        });
      for (std::thread& t : team) t.join();
      Saturation sum;
      for (const Saturation& s : got) sum.add(s);
      EXPECT_EQ(sum.pixels, whole.pixels) << bands << " bands, letterbox " << letterbox;
      EXPECT_EQ(sum.peak, whole.peak) << bands << " bands";
    }
  }
}

// Each run counts its own frame.
TEST(Gray16Saturation, EachRunStartsFromZero) {
  PreprocessOptions o = options(8, 8, 10);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  pre.run(gray16(8, 8, [](int, int) { return 1024; }).view, dst.data<float>());
  EXPECT_EQ(pre.saturation().pixels, 64u);
  EXPECT_EQ(pre.saturation().peak, 1024u);
  pre.run(gray16(8, 8, [](int, int) { return 1023; }).view, dst.data<float>());
  EXPECT_EQ(pre.saturation().pixels, 0u);
  EXPECT_EQ(pre.saturation().peak, 0u);
}

TEST(Gray16Saturation, RowCountAndBitsNeeded) {
  const float row[6] = {4095.f, 4095.49f, 4095.5f, 12000.4f, 0.f, 70000.f};
  const Saturation s = clamped_in_row(row, 6, 4095);
  EXPECT_EQ(s.pixels, 3u);
  EXPECT_EQ(s.peak, 65535u) << "a resized sample cannot exceed 16 bits; capped";
  EXPECT_FALSE(clamped_in_row(row, 2, 4095).any());
  EXPECT_EQ(clamped_in_row(row, 4, 4095).peak, 12000u);
  // Longer rows: the peak in any position, in the 8-wide part or the tail.
  for (int at : {0, 7, 8, 13, 16, 20}) {
    std::vector<float> long_row(21, 100.f);
    long_row[5] = 5000.f;
    long_row[at] = 7000.f;
    const Saturation l = clamped_in_row(long_row.data(), 21, 4095);
    EXPECT_EQ(l.pixels, 2u) << at;
    EXPECT_EQ(l.peak, 7000u) << at;
  }
  for (auto [sample, bits] : {std::pair{0u, 8},
                              {255u, 8},
                              {256u, 9},
                              {1023u, 10},
                              {1024u, 11},
                              {4095u, 12},
                              {4096u, 13},
                              {16383u, 14},
                              {16384u, 15},
                              {65535u, 16}})
    EXPECT_EQ(bits_for(sample), bits) << sample;
}

// ---- negative cases: nothing to count ----------------------------------------

// 8-bit samples cannot exceed their scale, and at input-bits 16 neither can
// 16-bit ones: no count, whatever the values.
TEST(Gray16SaturationErrors, EightBitFormatsAndSixteenBitsCountNothing) {
  cv::Mat white(48, 64, CV_8UC3, cv::Scalar::all(255));
  for (PixelFormat fmt : {PixelFormat::kGRAY8, PixelFormat::kRGB, PixelFormat::kYUY2,
                          PixelFormat::kNV12, PixelFormat::kBayerRGGB}) {
    const OwnedFrame f = make_frame(white, fmt);
    for (int bits : {8, 10, 16}) {
      PreprocessOptions o = options(32, 24, bits, ChannelOrder::kRGB);
      EXPECT_FALSE(run(f.view, o).any()) << to_string(fmt) << " input_bits " << bits;
    }
  }
  const OwnedFrame top = gray16(64, 48, [](int, int) { return 65535; });
  EXPECT_FALSE(run(top.view, options(64, 48, 16)).any());
  EXPECT_FALSE(run(top.view, options(32, 24, 16)).any());
}

// A frame the preprocessing refuses leaves no count from the run before.
TEST(Gray16SaturationErrors, ARefusedFrameReportsNothing) {
  PreprocessOptions o = options(8, 8, 12);
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  pre.run(gray16(8, 8, [](int, int) { return 5000; }).view, dst.data<float>());
  ASSERT_EQ(pre.saturation().pixels, 64u);
  OwnedFrame bad = gray16(8, 8, [](int, int) { return 5000; });
  bad.view.strides[0] = 15;  // shorter than a row
  EXPECT_THROW(pre.run(bad.view, dst.data<float>()), Error);
  EXPECT_FALSE(pre.saturation().any());
}

// ---- SaturationReport --------------------------------------------------------

TEST(SaturationReport, WarnsFirstThenOnMoreBitsThenOnABurstAfterTheQuietTime) {
  SaturationReport r(60s);
  const auto t0 = SaturationReport::Clock::time_point{} + 1000s;
  const Saturation none, hot14{10, 16383}, hot13{5, 5000}, hot16{3, 40000};
  struct Step {
    Saturation frame;
    std::chrono::seconds at;
    bool warn;
  };
  const std::vector<Step> steps = {
      {none, 0s, false},     // in range
      {hot14, 1s, true},     // the first: needs 14 bits
      {hot14, 2s, false},    // same burst
      {none, 3s, false},     //
      {hot13, 4s, false},    // a new burst, but within the quiet time and fewer bits
      {hot16, 5s, true},     // needs more bits than said
      {hot14, 6s, false},    // same burst
      {none, 7s, false},     //
      {hot14, 30s, false},   // new burst, 25 s after the last warning
      {none, 31s, false},    //
      {hot14, 66s, true},    // new burst, 61 s after it
      {hot14, 200s, false},  // same burst, however long
  };
  for (std::size_t i = 0; i < steps.size(); ++i)
    EXPECT_EQ(r.record(steps[i].frame, t0 + steps[i].at), steps[i].warn) << "step " << i;
  EXPECT_EQ(r.frames(), 8u);
  EXPECT_EQ(r.warned_bits(), 16);
}

TEST(SaturationReport, InRangeFramesNeverWarn) {
  SaturationReport r;
  for (int i = 0; i < 100; ++i)
    EXPECT_FALSE(r.record(Saturation{}, SaturationReport::Clock::now()));
  EXPECT_EQ(r.frames(), 0u);
  EXPECT_EQ(r.warned_bits(), 0);
}

TEST(SaturationReport, WarningNamesTheSettingThePeakAndTheFix) {
  SaturationReport r;
  const Saturation frame{1234, 16383};
  ASSERT_TRUE(r.record(frame, SaturationReport::Clock::now()));
  EXPECT_EQ(saturation_warning(12, frame, r),
            "GRAY16_LE samples reach 16383 but input-bits=12 makes 4095 white: 1234 model input "
            "pixels of this frame clamped to white, 1 frame so far; set input-bits=14 (or the "
            "camera's bit depth, if higher).");
  const Saturation more{7, 1100};
  r.record(more, SaturationReport::Clock::now());
  EXPECT_EQ(saturation_warning(10, more, r),
            "GRAY16_LE samples reach 1100 but input-bits=10 makes 1023 white: 7 model input "
            "pixels of this frame clamped to white, 2 frames so far; set input-bits=11 (or the "
            "camera's bit depth, if higher).");
}
