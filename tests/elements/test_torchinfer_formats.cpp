// Every camera format goes straight into torchinfer (no videoconvert), and
// what the model sees matches the reference chain: a probe model returns
// per-channel means over a 4x4 grid of its 64x64 input.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <opencv2/imgproc.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "element_helpers.h"
#include "frames.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

struct Case {
  const char* caps_format;
  PixelFormat format;
  float bound;  // pixel units, as in the preprocessing unit tests
};

// Copies an OwnedFrame into a buffer laid out the way GStreamer lays out `info`.
GstBuffer* to_gst_buffer(const OwnedFrame& f, const GstVideoInfo& info) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame vf;
  gst_video_frame_map(&vf, &info, buf, GST_MAP_WRITE);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&vf); ++p) {
    const int rows = GST_VIDEO_FRAME_COMP_HEIGHT(&vf, p == 0 ? 0 : 1);
    const int bytes = std::min(GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p), f.view.strides[p]);
    for (int y = 0; y < rows; ++y)
      std::memcpy(static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&vf, p)) +
                      y * GST_VIDEO_FRAME_PLANE_STRIDE(&vf, p),
                  f.view.planes[p] + static_cast<std::size_t>(y) * f.view.strides[p], bytes);
  }
  gst_video_frame_unmap(&vf);
  return buf;
}

}  // namespace

class TorchInferFormats : public testing::TestWithParam<Case> {};

TEST_P(TorchInferFormats, ProbeModelMatchesReferenceChain) {
  const Case c = GetParam();
  const int w = 321, h = 239;  // odd on purpose
  const std::string caps = std::string("video/x-raw,format=") + c.caps_format +
                           ",width=" + std::to_string(w) + ",height=" + std::to_string(h) +
                           ",framerate=30/1,colorimetry=bt601";
  GstHarness* hn = torchinfer_harness("model=" + model("grid_probe.pt"), caps);
  const GstVideoInfo info = info_of(caps);

  const OwnedFrame f = make_frame(make_rgb_image(w, h, 21), c.format);
  GstBuffer* out = gst_harness_push_and_pull(hn, to_gst_buffer(f, info));
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->tensors[0].n_dims, 4u);
  const float* grid = static_cast<const float*>(m->tensors[0].data);

  PreprocessOptions o;  // the probe's sidecar: 64x64 rgb, mean 0, std 1
  o.out_width = o.out_height = 64;
  o.alpha = {1 / 255.f, 1 / 255.f, 1 / 255.f};
  o.beta = {0.f, 0.f, 0.f};
  const std::vector<float> ref = reference_preprocess(f.view, o);
  for (int gy = 0; gy < 4; ++gy)
    for (int gx = 0; gx < 4; ++gx)
      for (int ch = 0; ch < 3; ++ch) {
        double sum = 0;
        for (int y = gy * 16; y < gy * 16 + 16; ++y)
          for (int x = gx * 16; x < gx * 16 + 16; ++x) sum += ref[(y * 64 + x) * 3 + ch];
        EXPECT_NEAR(grid[(gy * 4 + gx) * 3 + ch], sum / 256, c.bound / 255.0)
            << c.caps_format << " cell " << gy << "," << gx << " channel " << ch;
      }
  gst_buffer_unref(out);
  gst_harness_teardown(hn);
}

INSTANTIATE_TEST_SUITE_P(
    CameraFormats, TorchInferFormats,
    testing::Values(Case{"YUY2", PixelFormat::kYUY2, 1.f}, Case{"UYVY", PixelFormat::kUYVY, 1.f},
                    Case{"NV12", PixelFormat::kNV12, 1.f}, Case{"NV21", PixelFormat::kNV21, 1.f},
                    Case{"I420", PixelFormat::kI420, 1.f}, Case{"YV12", PixelFormat::kYV12, 1.f},
                    Case{"RGB", PixelFormat::kRGB, 0.05f}, Case{"BGRx", PixelFormat::kBGRx, 0.05f},
                    Case{"xBGR", PixelFormat::kxBGR, 0.05f},
                    Case{"GRAY8", PixelFormat::kGRAY8, 0.05f},
                    // The reference rounds 16-bit luma to 8 bits, the element does not.
                    Case{"GRAY16_LE", PixelFormat::kGRAY16_LE, 0.5f}),
    [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.caps_format); });

// A crop feeds only the region to the model and shifts the transform.
TEST(TorchInferCrop, RegionAndTransform) {
  const char* caps = "video/x-raw,format=NV12,width=320,height=240,framerate=30/1";
  GstHarness* hn =
      torchinfer_harness("model=" + model("grid_probe.pt") + " crop=100,50,128,128", caps);
  const GstVideoInfo info = info_of(caps);
  const OwnedFrame f = make_frame(make_rgb_image(320, 240, 5), PixelFormat::kNV12);
  GstBuffer* out = gst_harness_push_and_pull(hn, to_gst_buffer(f, info));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->transform.scale_x, 0.5);
  EXPECT_DOUBLE_EQ(m->transform.offset_x, -50.0);
  EXPECT_DOUBLE_EQ(m->transform.offset_y, -25.0);
  PreprocessOptions o;
  o.out_width = o.out_height = 64;
  o.alpha = {1 / 255.f, 1 / 255.f, 1 / 255.f};
  o.beta = {0.f, 0.f, 0.f};
  o.crop = {100, 50, 128, 128};
  const std::vector<float> ref = reference_preprocess(f.view, o);
  const float* grid = static_cast<const float*>(m->tensors[0].data);
  double sum = 0;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) sum += ref[(y * 64 + x) * 3];
  EXPECT_NEAR(grid[0], sum / 256, 1 / 255.0);
  gst_buffer_unref(out);
  gst_harness_teardown(hn);
}

TEST(TorchInferCrop, BadValuesRejected) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  g_object_set(e, "crop", "1,2,3,4", nullptr);
  {
    WarningCatcher w;
    for (const char* bad : {"1,2,3", "a,b,c,d", "-1,0,10,10", "0,0,0,10", "1,2,3,4,5"})
      g_object_set(e, "crop", bad, nullptr);
    EXPECT_EQ(w.messages().size(), 5u);
  }
  gchar* v = nullptr;
  g_object_get(e, "crop", &v, nullptr);
  EXPECT_STREQ(v, "1,2,3,4");
  g_free(v);
  gst_object_unref(e);
}

TEST(TorchInferCrop, CropOutsideTheFrameIsAStreamError) {
  const char* caps = "video/x-raw,format=RGB,width=64,height=48,framerate=30/1";
  GstHarness* hn =
      torchinfer_harness("model=" + model("grid_probe.pt") + " crop=500,500,10,10", caps);
  const GstVideoInfo info = info_of(caps);
  EXPECT_EQ(gst_harness_push(hn, make_video_buffer(info, 1)), GST_FLOW_ERROR);
  gst_harness_teardown(hn);
}

// ---- Bayer and 16-bit mono (machine-vision cameras) ----------------------

namespace {

const char* const kBayerOrders[] = {"rggb", "bggr", "grbg", "gbrg"};

PixelFormat bayer_format(const std::string& order) {
  for (const PixelFormatInfo& e : kPixelFormats)
    if (is_bayer(e.format) && order == e.name) return e.format;
  ADD_FAILURE() << order;
  return PixelFormat::kBayerRGGB;
}

std::string bayer_caps(const std::string& order, int w, int h) {
  return "video/x-bayer,format=" + order + ",width=" + std::to_string(w) +
         ",height=" + std::to_string(h) + ",framerate=30/1";
}

// Bayer buffers as bayer2rgb, rgb2bayer and aravissrc lay them out: one
// 8-bit plane, rows padded to 4 bytes.
GstVideoInfo bayer_info(int w, int h) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, w, h);
  return info;
}

// The probe's 4x4 grid of per-channel means over the reference's 64x64.
std::vector<double> grid_of(const std::vector<float>& ref) {
  std::vector<double> g(48, 0.0);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x)
      for (int ch = 0; ch < 3; ++ch)
        g[((y / 16) * 4 + x / 16) * 3 + ch] += ref[(y * 64 + x) * 3 + ch] / 256;
  return g;
}

PreprocessOptions probe_options() {
  PreprocessOptions o;  // the probe's sidecar: 64x64 rgb, mean 0, std 1
  o.out_width = o.out_height = 64;
  o.alpha = {1 / 255.f, 1 / 255.f, 1 / 255.f};
  o.beta = {0.f, 0.f, 0.f};
  return o;
}

}  // namespace

class TorchInferBayer : public testing::TestWithParam<const char*> {};

// A mosaic made from a known RGB image (odd size: the last column and row,
// half a cell, are not read) against that image cut to whole cells and
// area-resized. The content is blurred like a camera's optics (sigma 2);
// bound 0.2/255 on the probe's 16x16-pixel means (measured max 0.053/255).
TEST_P(TorchInferBayer, EveryOrderMatchesTheSourceRgb) {
  const std::string order = GetParam();
  const int w = 321, h = 239;
  GstHarness* hn = torchinfer_harness("model=" + model("grid_probe.pt"), bayer_caps(order, w, h));
  cv::Mat rgb = make_rgb_image(w, h, 21);
  cv::GaussianBlur(rgb, rgb, cv::Size(0, 0), 2.0);
  const OwnedFrame f = make_frame(rgb, bayer_format(order));
  GstBuffer* out = gst_harness_push_and_pull(hn, to_gst_buffer(f, bayer_info(w, h)));
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->transform.scale_x, 64.0 / 320);
  EXPECT_DOUBLE_EQ(m->transform.scale_y, 64.0 / 238);
  const float* grid = static_cast<const float*>(m->tensors[0].data);
  const std::vector<double> want =
      grid_of(reference_preprocess(rgb, bayer_format(order), probe_options()));
  for (int i = 0; i < 48; ++i)
    EXPECT_NEAR(grid[i], want[i], 0.2 / 255.0) << order << " value " << i;
  gst_buffer_unref(out);
  gst_harness_teardown(hn);
}

// The mosaic from GStreamer's own rgb2bayer (videotestsrc's SMPTE bars in
// ARGB): the bars' colours land in the right channels for every order. The
// bars' hard edges are not band-limited like a camera's image, so the bound
// is 3.5/255 on the 16x16-pixel means (measured max 2.87/255).
TEST_P(TorchInferBayer, Rgb2bayerFramesMatchTheirArgbSource) {
  const std::string order = GetParam();
  const std::string src =
      "videotestsrc pattern=smpte ! video/x-raw,format=ARGB,width=320,height=240,framerate=30/1";
  GstHarness* argb = gst_harness_new("identity");
  // Caps at the end of a launch line need an element after them.
  gst_harness_add_src_parse(argb, (src + " ! identity").c_str(), FALSE);
  ASSERT_EQ(gst_harness_push_from_src(argb), GST_FLOW_OK);
  GstBuffer* source = gst_harness_pull(argb);
  ASSERT_NE(source, nullptr);
  cv::Mat rgb(240, 320, CV_8UC3);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(source, &map, GST_MAP_READ));
  for (int y = 0; y < 240; ++y)
    for (int x = 0; x < 320; ++x) {
      const guint8* p = map.data + (y * 320 + x) * 4;  // A R G B
      rgb.at<cv::Vec3b>(y, x) = {p[1], p[2], p[3]};
    }
  gst_buffer_unmap(source, &map);

  GstHarness* hn =
      torchinfer_harness("model=" + model("grid_probe.pt"), bayer_caps(order, 320, 240));
  gst_harness_add_src_parse(
      hn, (src + " ! rgb2bayer ! video/x-bayer,format=" + order + " ! identity").c_str(), FALSE);
  ASSERT_EQ(gst_harness_push_from_src(hn), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(hn);
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  const float* grid = static_cast<const float*>(m->tensors[0].data);
  const std::vector<double> want =
      grid_of(reference_preprocess(rgb, bayer_format(order), probe_options()));
  for (int i = 0; i < 48; ++i)
    EXPECT_NEAR(grid[i], want[i], 3.5 / 255.0) << order << " value " << i;
  gst_buffer_unref(out);
  gst_buffer_unref(source);
  gst_harness_teardown(hn);
  gst_harness_teardown(argb);
}

INSTANTIATE_TEST_SUITE_P(EveryOrder, TorchInferBayer, testing::ValuesIn(kBayerOrders),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

// A crop with odd corners snaps to whole cells, as documented: origin down,
// far edge up to even.
TEST(TorchInferBayerCrop, OddCornersSnapToWholeCells) {
  GstHarness* hn = torchinfer_harness("model=" + model("grid_probe.pt") + " crop=101,51,127,127",
                                      bayer_caps("grbg", 320, 240));
  const OwnedFrame f = make_frame(make_rgb_image(320, 240, 5), PixelFormat::kBayerGRBG);
  GstBuffer* out = gst_harness_push_and_pull(hn, to_gst_buffer(f, bayer_info(320, 240)));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  // Region 100..228 x 50..178: 128 x 128.
  EXPECT_DOUBLE_EQ(m->transform.scale_x, 0.5);
  EXPECT_DOUBLE_EQ(m->transform.offset_x, -50.0);
  EXPECT_DOUBLE_EQ(m->transform.offset_y, -25.0);
  gst_buffer_unref(out);
  gst_harness_teardown(hn);
}

// input-bits: a Mono12 camera's samples (0..4095 in 16 bits) reach the model
// at the scale the property says.
TEST(TorchInferGray16, InputBitsSetsFullScale) {
  const std::string caps = "video/x-raw,format=GRAY16_LE,width=64,height=48,framerate=30/1";
  const GstVideoInfo info = info_of(caps);
  for (auto [bits, want] : {std::pair{12, 1000.0 / 4095}, std::pair{16, 1000.0 / 65535}}) {
    GstHarness* hn = torchinfer_harness(
        "model=" + model("grid_probe.pt") + " input-bits=" + std::to_string(bits), caps);
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    for (gsize i = 0; i + 1 < map.size; i += 2)
      map.data[i] = 1000 & 0xFF, map.data[i + 1] = 1000 >> 8;
    gst_buffer_unmap(buf, &map);
    GstBuffer* out = gst_harness_push_and_pull(hn, buf);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr);
    const float* grid = static_cast<const float*>(m->tensors[0].data);
    for (int i = 0; i < 48; ++i) EXPECT_NEAR(grid[i], want, 1e-5) << bits << " value " << i;
    gst_buffer_unref(out);
    gst_harness_teardown(hn);
  }
}

namespace {

// A GRAY16_LE frame of `info`'s size with each sample value(x, y).
GstBuffer* gray16_buffer(const GstVideoInfo& info, const std::function<guint16(int, int)>& value) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame vf;
  gst_video_frame_map(&vf, &info, buf, GST_MAP_WRITE);
  for (int y = 0; y < GST_VIDEO_INFO_HEIGHT(&info); ++y) {
    auto* row = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&vf, 0)) +
                y * GST_VIDEO_FRAME_PLANE_STRIDE(&vf, 0);
    for (int x = 0; x < GST_VIDEO_INFO_WIDTH(&info); ++x) {
      const guint16 v = value(x, y);
      row[2 * x] = v & 0xFF, row[2 * x + 1] = v >> 8;
    }
  }
  gst_video_frame_unmap(&vf);
  return buf;
}

// The texts of the warnings on `bus` so far, each checked to be
// STREAM/FORMAT.
std::vector<std::string> format_warnings(GstBus* bus) {
  std::vector<std::string> texts;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gst_message_parse_warning(msg, &err, nullptr);
    EXPECT_EQ(err->domain, GST_STREAM_ERROR) << err->message;
    EXPECT_EQ(err->code, GST_STREAM_ERROR_FORMAT) << err->message;
    texts.push_back(err->message);
    g_error_free(err);
    gst_message_unref(msg);
  }
  return texts;
}

guint64 stats_field(GstElement* e, const char* field) {
  GstStructure* stats = nullptr;
  g_object_get(e, "stats", &stats, nullptr);
  guint64 v = 0;
  EXPECT_TRUE(stats && gst_structure_get_uint64(stats, field, &v)) << field;
  if (stats) gst_structure_free(stats);
  return v;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// input-bits=12 on a camera whose samples reach 16383: each frame with a
// clamped model input pixel is counted (frames-saturated), and the bus gets
// a warning when it starts and again when the samples need more bits than
// the last warning said. The frame is at the model's size (64x64), so each
// sample is one model input pixel; with preprocess-on=inference-threads and
// 2 threads it is prepared in two row bands, whose counts must add up.
TEST(TorchInferGray16, SamplesAboveInputBitsWarnAndAreCounted) {
  const std::string caps = "video/x-raw,format=GRAY16_LE,width=64,height=64,framerate=30/1";
  const GstVideoInfo info = info_of(caps);
  // 100 samples over both halves: the diagonal and 36 of the last row.
  auto hot = [](guint16 high) {
    return [high](int x, int y) -> guint16 { return x == y || (y == 63 && x < 36) ? high : 1000; };
  };
  auto in_range = [](int x, int y) -> guint16 { return (x * 64 + y) % 4096; };  // up to 4095
  for (const char* where : {"streaming-thread", "inference-threads"}) {
    GstHarness* h =
        torchinfer_harness("model=" + model("grid_probe.pt") +
                               " input-bits=12 threads=2 lanes=1 preprocess-on=" + where,
                           caps);
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    const std::vector<std::function<guint16(int, int)>> frames = {
        in_range, in_range, hot(16383), hot(16383), hot(16383), hot(40000), in_range};
    std::vector<std::size_t> warned_after;
    std::vector<std::string> warnings;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      gst_buffer_unref(gst_harness_push_and_pull(h, gray16_buffer(info, frames[i])));
      for (const std::string& w : format_warnings(bus)) {
        warnings.push_back(w);
        warned_after.push_back(i);
      }
    }
    // The first saturated frame, and the one that needs 16 bits.
    // No ASSERT before the teardown: a harness left running hangs gst_deinit.
    EXPECT_EQ(warned_after, (std::vector<std::size_t>{2, 5})) << where;
    warnings.resize(2);
    EXPECT_TRUE(has(warnings[0], "samples reach 16383 but input-bits=12 makes 4095 white"))
        << warnings[0];
    EXPECT_TRUE(has(warnings[0], "100 model input pixels of this frame clamped to white"))
        << warnings[0];
    EXPECT_TRUE(has(warnings[0], "1 frame so far")) << warnings[0];
    EXPECT_TRUE(has(warnings[0], "set input-bits=14")) << warnings[0];
    EXPECT_TRUE(has(warnings[1], "samples reach 40000")) << warnings[1];
    EXPECT_TRUE(has(warnings[1], "4 frames so far")) << warnings[1];
    EXPECT_TRUE(has(warnings[1], "set input-bits=16")) << warnings[1];
    EXPECT_EQ(stats_field(h->element, "frames-saturated"), 4u) << where;
    EXPECT_EQ(stats_field(h->element, "frames-inferred"), 7u) << where;
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
}

// Samples up to full scale, resized (area and linear) or not, and any
// sample at input-bits=16: nothing clamps, nothing is said.
TEST(TorchInferGray16, SamplesWithinInputBitsNeitherWarnNorCount) {
  for (auto [bits, size, top] : {std::tuple{12, "64,height=64", 4095},
                                 {12, "250,height=30", 4095},
                                 {10, "97,height=131", 1023},
                                 {16, "80,height=48", 65535}}) {
    const std::string caps =
        std::string("video/x-raw,format=GRAY16_LE,width=") + size + ",framerate=30/1";
    const GstVideoInfo info = info_of(caps);
    GstHarness* h = torchinfer_harness(
        "model=" + model("grid_probe.pt") + " input-bits=" + std::to_string(bits), caps);
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    const int full = top;
    // Half the frame at full scale, half dark: resizing averages across.
    for (int i = 0; i < 3; ++i)
      gst_buffer_unref(gst_harness_push_and_pull(
          h, gray16_buffer(info, [full, i](int x, int) { return (x + i) % 2 ? full : 0; })));
    EXPECT_EQ(format_warnings(bus), std::vector<std::string>{}) << caps;
    EXPECT_EQ(stats_field(h->element, "frames-saturated"), 0u) << caps;
    EXPECT_EQ(stats_field(h->element, "frames-inferred"), 3u) << caps;
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
}

// torchnms, torchtrack and torchmetaconvert pass Bayer and GRAY16 frames on
// untouched (same bytes, same caps) and still do their work on the metas.
TEST(CameraFormatsDownstream, NmsTrackAndMetaconvertPassFramesUntouched) {
  for (const std::string& caps : {bayer_caps("bggr", 640, 512),
                                  std::string("video/x-raw,format=GRAY16_LE,width=640,height=512,"
                                              "framerate=30/1")}) {
    gchar* path = nullptr;
    const int fd = g_file_open_tmp("torchinfer-bayer-XXXXXX.jsonl", &path, nullptr);
    ASSERT_GE(fd, 0);
    close(fd);
    const std::string line = "torchinfer model=" + model("yolo_candidates.pt") +
                             " ! torchnms ! torchtrack ! torchmetaconvert location=" + path;
    GstHarness* h = gst_harness_new_parse(line.c_str());
    gst_harness_set_src_caps_str(h, caps.c_str());
    const gsize size = 640 * 512 * (caps.find("GRAY16") != std::string::npos ? 2 : 1);
    GstBuffer* in = gst_buffer_new_allocate(nullptr, size, nullptr);
    GstMapInfo map;
    gst_buffer_map(in, &map, GST_MAP_WRITE);
    for (gsize i = 0; i < size; ++i) map.data[i] = static_cast<guint8>((i * 13) >> 4);
    std::vector<guint8> bytes(map.data, map.data + size);
    gst_buffer_unmap(in, &map);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr) << caps;
    ASSERT_EQ(gst_buffer_get_size(out), size);
    ASSERT_TRUE(gst_buffer_map(out, &map, GST_MAP_READ));
    EXPECT_EQ(std::memcmp(map.data, bytes.data(), size), 0) << caps;
    gst_buffer_unmap(out, &map);
    EXPECT_NE(gst_buffer_get_torch_tensor_meta(out), nullptr) << caps;
    GstCaps* got = gst_pad_get_current_caps(h->sinkpad);
    GstCaps* want = gst_caps_from_string(caps.c_str());
    EXPECT_TRUE(gst_caps_is_equal(got, want)) << caps;
    gst_caps_unref(got);
    gst_caps_unref(want);
    gst_buffer_unref(out);
    gst_harness_teardown(h);
    std::ifstream json(path);
    std::string first;
    EXPECT_TRUE(std::getline(json, first)) << caps;
    EXPECT_NE(first.find("\"detections\""), std::string::npos) << first;
    unlink(path);
    g_free(path);
  }
}

// ---- negative cases -------------------------------------------------------

// Caps torchinfer cannot read are refused at negotiation: 16-bit Bayer,
// unknown orders, Bayer without a size; torchoverlay takes no Bayer or
// 16-bit frames at all (draw on a converted branch).
TEST(CameraFormatsErrors, UnreadableCapsAreRefused) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  for (const char* bad : {"video/x-bayer,format=bggr16le,width=64,height=48,framerate=30/1",
                          "video/x-bayer,format=xyzw,width=64,height=48,framerate=30/1",
                          "video/x-raw,format=GRAY16_BE,width=64,height=48,framerate=30/1"}) {
    GstCaps* c = gst_caps_from_string(bad);
    EXPECT_FALSE(gst_pad_query_accept_caps(sink, c)) << bad;
    gst_caps_unref(c);
  }
  GstCaps* good = gst_caps_from_string(bayer_caps("rggb", 64, 48).c_str());
  EXPECT_TRUE(gst_pad_query_accept_caps(sink, good));
  gst_object_unref(sink);
  gst_object_unref(e);

  GstElement* overlay = gst_element_factory_make("torchoverlay", nullptr);
  GstPad* osink = gst_element_get_static_pad(overlay, "sink");
  EXPECT_FALSE(gst_pad_query_accept_caps(osink, good));
  GstCaps* gray16 =
      gst_caps_from_string("video/x-raw,format=GRAY16_LE,width=64,height=48,framerate=30/1");
  EXPECT_FALSE(gst_pad_query_accept_caps(osink, gray16));
  gst_caps_unref(gray16);
  gst_caps_unref(good);
  gst_object_unref(osink);
  gst_object_unref(overlay);
}

TEST(CameraFormatsErrors, BayerCapsWithoutSizeFailNegotiation) {
  GstHarness* hn = torchinfer_harness("model=" + model("grid_probe.pt"),
                                      "video/x-bayer,format=rggb,framerate=30/1");
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 64, nullptr);
  EXPECT_EQ(gst_harness_push(hn, buf), GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown(hn);
}

// A one-row Bayer frame has no full 2x2 cell: a stream error naming it, not
// a crash.
TEST(CameraFormatsErrors, BayerFrameSmallerThanACellIsAStreamError) {
  GstHarness* hn = torchinfer_harness("model=" + model("grid_probe.pt"), bayer_caps("rggb", 64, 1));
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 64, nullptr);
  gst_buffer_memset(buf, 0, 9, 64);
  EXPECT_EQ(gst_harness_push(hn, buf), GST_FLOW_ERROR);
  gst_harness_teardown(hn);
}

// inference-region=roi-list on a Bayer frame: each region (odd corners,
// odd frame) equals full-frame inference on the region cut out by hand in
// whole 2x2 cells, bit for bit, and its transform names those cells.
TEST(TorchInferBayerRoi, RegionEqualsTheWholeCellsCutOutByHand) {
  const int W = 97, H = 75;
  const std::string caps = bayer_caps("gbrg", W, H);
  const OwnedFrame f = make_frame(make_rgb_image(W, H, 11), PixelFormat::kBayerGBRG);
  const GstVideoInfo info = bayer_info(W, H);
  struct Region {
    int x, y, w, h, x0, y0, x1, y1;  // the ROI, then the cells read
  };
  const Region regions[] = {{13, 7, 41, 29, 12, 6, 54, 36},
                            {0, 0, W, H, 0, 0, 96, 74},
                            {61, 49, 36, 26, 60, 48, 96, 74},
                            {5, 3, 3, 2, 4, 2, 8, 6}};
  GstHarness* roi_h = torchinfer_harness(
      "model=" + model("roi_identity.pt") + " inference-region=roi-list batch-size=4", caps);
  GstBuffer* in = to_gst_buffer(f, info);
  for (int i = 0; i < 4; ++i) {
    GstVideoRegionOfInterestMeta* roi = gst_buffer_add_video_region_of_interest_meta(
        in, "part", regions[i].x, regions[i].y, regions[i].w, regions[i].h);
    roi->id = i;
  }
  GstBuffer* out = gst_harness_push_and_pull(roi_h, in);
  ASSERT_NE(out, nullptr);
  for (int i = 0; i < 4; ++i) {
    const Region& r = regions[i];
    const int cw = r.x1 - r.x0, ch = r.y1 - r.y0;
    GstHarness* ref_h =
        torchinfer_harness("model=" + model("roi_identity.pt"), bayer_caps("gbrg", cw, ch));
    OwnedFrame part;
    part.view = f.view;
    part.view.planes[0] += r.y0 * f.view.strides[0] + r.x0;  // even: the same cell phase
    part.view.width = cw, part.view.height = ch;
    GstBuffer* ref = gst_harness_push_and_pull(ref_h, to_gst_buffer(part, bayer_info(cw, ch)));
    ASSERT_NE(ref, nullptr);
    GstTorchTensorMeta* want = gst_buffer_get_torch_tensor_meta(ref);
    GstTorchTensorMeta* got = gst_buffer_get_torch_tensor_meta_for_roi(out, i, nullptr);
    ASSERT_NE(want, nullptr);
    ASSERT_NE(got, nullptr) << "region " << i;
    ASSERT_EQ(got->tensors[0].size, want->tensors[0].size);
    EXPECT_EQ(std::memcmp(got->tensors[0].data, want->tensors[0].data, got->tensors[0].size), 0)
        << "region " << i;
    EXPECT_DOUBLE_EQ(got->transform.scale_x, 16.0 / cw) << "region " << i;
    EXPECT_DOUBLE_EQ(got->transform.offset_x, -r.x0 * got->transform.scale_x) << "region " << i;
    gst_buffer_unref(ref);
    gst_harness_teardown(ref_h);
  }
  gst_buffer_unref(out);
  gst_harness_teardown(roi_h);
}
