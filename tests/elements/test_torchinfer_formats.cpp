// Every camera format goes straight into torchinfer (no videoconvert), and
// what the model sees matches the reference chain: a probe model returns
// per-channel means over a 4x4 grid of its 64x64 input.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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
                    Case{"GRAY8", PixelFormat::kGRAY8, 0.05f}),
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
