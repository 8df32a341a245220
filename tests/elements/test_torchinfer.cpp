// GstHarness tests of the torchinfer element: caps, passthrough, results,
// and every way a user can hand it something wrong.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/aligned_buffer.h"
#include "common/model_config.h"
#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "preprocess/preprocess.h"
#include "torch_reference.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

const char* kRgb640 = "video/x-raw,format=RGB,width=640,height=480,framerate=30/1";

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string copy_file(const std::string& from, const std::string& name) {
  const std::string path = testing::TempDir() + name;
  std::ifstream in(from, std::ios::binary);
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  return path;
}

GstElement* make_torchinfer(const std::string& props) {
  const std::string line = "torchinfer " + props;
  return gst_parse_launch(line.c_str(), nullptr);
}

// Starts torchinfer with props and expects a failure in domain/code whose
// message contains `needle`.
void expect_start_error(const std::string& props, GQuark domain, int code,
                        const std::string& needle) {
  GstElement* e = make_torchinfer(props);
  ASSERT_NE(e, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << props;
  ASSERT_TRUE(r.error.set) << props;
  EXPECT_EQ(r.error.domain, domain) << r.error.message;
  EXPECT_EQ(r.error.code, code) << r.error.message;
  EXPECT_NE(r.error.message.find(needle), std::string::npos) << r.error.message;
  EXPECT_EQ(r.error.message.find('\n'), std::string::npos)
      << "one readable line: " << r.error.message;
  gst_object_unref(e);
}

}  // namespace

// ---- positive -------------------------------------------------------------

TEST(TorchInfer, AcceptsCameraFormats) {
  for (const char* fmt : {"YUY2", "UYVY", "RGB", "BGR", "RGBx", "BGRx", "xRGB", "ABGR", "GRAY8"}) {
    const std::string caps =
        std::string("video/x-raw,format=") + fmt + ",width=64,height=48,framerate=30/1";
    GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"), caps);
    const GstVideoInfo info = info_of(caps);
    GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info, 1));
    ASSERT_NE(out, nullptr) << fmt;
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr) << fmt;
    EXPECT_EQ(m->frame_width, 64u);
    EXPECT_EQ(m->frame_height, 48u);
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

TEST(TorchInfer, PassesBytesAndTimestampsThrough) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"),
                                     "video/x-raw,format=YUY2,width=320,height=240,framerate=30/1");
  const GstVideoInfo info = info_of("video/x-raw,format=YUY2,width=320,height=240,framerate=30/1");
  for (int i = 0; i < 5; ++i) {
    GstBuffer* in = make_video_buffer(info, i);
    GST_BUFFER_PTS(in) = 1000 + i * 33 * GST_MSECOND;
    GST_BUFFER_DTS(in) = 500 + i * 33 * GST_MSECOND;
    GST_BUFFER_DURATION(in) = 33 * GST_MSECOND;
    GST_BUFFER_OFFSET(in) = 100 + i;
    GST_BUFFER_OFFSET_END(in) = 101 + i;
    if (i == 2) GST_BUFFER_FLAG_SET(in, GST_BUFFER_FLAG_DISCONT);
    GstBuffer* expected = gst_buffer_copy_deep(in);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(expected));
    EXPECT_EQ(GST_BUFFER_DTS(out), GST_BUFFER_DTS(expected));
    EXPECT_EQ(GST_BUFFER_DURATION(out), GST_BUFFER_DURATION(expected));
    EXPECT_EQ(GST_BUFFER_OFFSET(out), GST_BUFFER_OFFSET(expected));
    EXPECT_EQ(GST_BUFFER_OFFSET_END(out), GST_BUFFER_OFFSET_END(expected));
    EXPECT_EQ(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DISCONT), i == 2);
    GstMapInfo a, b;
    gst_buffer_map(out, &a, GST_MAP_READ);
    gst_buffer_map(expected, &b, GST_MAP_READ);
    ASSERT_EQ(a.size, b.size);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.size), 0);
    gst_buffer_unmap(out, &a);
    gst_buffer_unmap(expected, &b);
    gst_buffer_unref(out);
    gst_buffer_unref(expected);
  }
  guint64 frames = 0;
  g_object_get(h->element, "frames", &frames, nullptr);
  EXPECT_EQ(frames, 5u);
  gst_harness_teardown(h);
}

// The meta holds exactly what plain libtorch computes on the same input.
TEST(TorchInfer, MetaMatchesPlainLibtorch) {
  const std::string path = model("tiny_classifier.pt");
  // fp32: auto may time bf16 faster on a loaded machine and round differently.
  GstHarness* h = torchinfer_harness("model=" + path + " precision=fp32", kRgb640);
  const GstVideoInfo info = info_of(kRgb640);
  GstBuffer* in = make_video_buffer(info, 3);
  GstMapInfo map;
  gst_buffer_map(in, &map, GST_MAP_READ);
  const ModelConfig cfg = resolve_model_config(path, "", {});
  Preprocessor pre(PreprocessOptions::from_config(cfg));
  AlignedBuffer input(pre.options().slot_bytes());
  FrameView fv;
  fv.format = PixelFormat::kRGB;
  fv.width = 640;
  fv.height = 480;
  fv.planes[0] = map.data;
  fv.strides[0] = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  pre.run(fv, input.data<float>());
  gst_buffer_unmap(in, &map);
  const std::vector<float> expected = run_reference_model(path, input.data<float>(), 32, 48, 3);

  GstBuffer* out = gst_harness_push_and_pull(h, in);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->n_tensors, 1u);
  const GstTorchTensor& t = m->tensors[0];
  EXPECT_STREQ(t.name, "output");
  EXPECT_EQ(t.dtype, GST_TORCH_DTYPE_FLOAT32);
  ASSERT_EQ(t.n_dims, 2u);
  EXPECT_EQ(t.dims[0], 1);
  EXPECT_EQ(t.dims[1], 5);
  EXPECT_EQ(t.size, 5 * sizeof(float));
  ASSERT_EQ(expected.size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(static_cast<const float*>(t.data)[i], expected[i], 1e-4) << i;
  EXPECT_EQ(m->input_width, 48u);
  EXPECT_EQ(m->input_height, 32u);
  EXPECT_DOUBLE_EQ(m->transform.scale_x, 48.0 / 640);
  EXPECT_DOUBLE_EQ(m->transform.scale_y, 32.0 / 480);
  EXPECT_EQ(m->batch_size, 1u);
  EXPECT_GT(m->inference_ns, 0u);
  EXPECT_STREQ(m->model, path.c_str());
  EXPECT_EQ(gst_torch_tensor_meta_get_tensor(m, "output"), &m->tensors[0]);
  EXPECT_EQ(gst_torch_tensor_meta_get_tensor(m, "nope"), nullptr);

  // Classification: top-3 from the sidecar, labels from its labels file.
  GstCustomMeta* cm = gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME);
  ASSERT_NE(cm, nullptr);
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  EXPECT_TRUE(gst_structure_has_name(s, "classification"));
  int best = 0;
  for (int i = 1; i < 5; ++i)
    if (expected[i] > expected[best]) best = i;
  const char* names[] = {"alpha", "beta", "gamma", "delta", "epsilon"};
  int id = -1;
  double conf = 0;
  ASSERT_TRUE(gst_structure_get_int(s, "label_id", &id));
  ASSERT_TRUE(gst_structure_get_double(s, "confidence", &conf));
  EXPECT_EQ(id, best);
  EXPECT_STREQ(gst_structure_get_string(s, "label"), names[best]);
  double z = 0;
  for (float v : expected) z += std::exp(v);
  EXPECT_NEAR(conf, std::exp(expected[best]) / z, 1e-4);
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(s, "labels")), 3u);
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(s, "confidences")), 3u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// Pushes one 8x6 packed 3-byte frame through a model whose output is its
// 8x6 input (NCHW), and checks out[c][y][x] == want(pixel bytes, c).
template <typename Want>
void expect_model_input(const std::string& props, const char* format, Want want) {
  const std::string caps =
      std::string("video/x-raw,format=") + format + ",width=8,height=6,framerate=30/1";
  GstHarness* h = torchinfer_harness(props, caps);
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = make_video_buffer(info, 9);
  GstBuffer* ref = gst_buffer_copy_deep(in);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  const float* y = static_cast<const float*>(m->tensors[0].data);
  GstMapInfo map;
  gst_buffer_map(ref, &map, GST_MAP_READ);
  const int stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 6; ++r)
      for (int x = 0; x < 8; ++x)
        ASSERT_NEAR(y[(c * 6 + r) * 8 + x], want(&map.data[r * stride + x * 3], c), 1e-5)
            << c << "," << r << "," << x;
  gst_buffer_unmap(ref, &map);
  // Both models are task "raw": no classification meta.
  EXPECT_EQ(gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
  gst_buffer_unref(ref);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInfer, IdentityModelSeesNormalisedPixels) {
  // 8x6 RGB frame into an 8x6 model: no resize, exact values; task "raw" in
  // the sidecar, so no classification meta.
  expect_model_input("model=" + model("identity.pt") + " mean=0.5 std=0.25", "RGB",
                     [](const guint8* px, int c) { return (px[c] / 255.f - 0.5f) / 0.25f; });
}

TEST(TorchInfer, Uint8ModelGetsRawPixels) {
  // Model channel c is RGB; the frame is BGR. No mean/std: the model does x*2-1.
  expect_model_input("model=" + model("uint8_input.pt"), "BGR",
                     [](const guint8* px, int c) { return px[2 - c] * 2.f - 1.f; });
}

TEST(TorchInfer, NoSidecarUsesTorchvisionDefaults) {
  const std::string bare = copy_file(model("tiny_classifier.pt"), "bare_classifier.pt");
  GstHarness* h = torchinfer_harness("model=" + bare, kRgb640);
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info_of(kRgb640), 1));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->input_width, 224u);
  EXPECT_EQ(m->input_height, 224u);
  const GstStructure* s = gst_custom_meta_get_structure(
      gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME));
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(s, "labels")), 5u);  // default top-k 5
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInfer, PropertiesOverrideSidecar) {
  GstHarness* h =
      torchinfer_harness("model=" + model("tiny_classifier.pt") +
                             " input-width=64 input-height=40 top-k=1 keep-aspect-ratio=true",
                         kRgb640);
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info_of(kRgb640), 1));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->input_width, 64u);
  EXPECT_EQ(m->input_height, 40u);
  // 640x480 letterboxed into 64x40: scale 40/480 on both axes, centred.
  EXPECT_DOUBLE_EQ(m->transform.scale_y, 40.0 / 480);
  EXPECT_DOUBLE_EQ(m->transform.scale_x, 53.0 / 640);
  EXPECT_DOUBLE_EQ(m->transform.offset_x, 5);
  EXPECT_DOUBLE_EQ(m->transform.offset_y, 0);
  const GstStructure* s = gst_custom_meta_get_structure(
      gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME));
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(s, "labels")), 1u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInfer, MetaSurvivesCopiesAndOutlivesTheBuffer) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"), kRgb640);
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info_of(kRgb640), 2));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  std::vector<float> values(static_cast<const float*>(m->tensors[0].data),
                            static_cast<const float*>(m->tensors[0].data) + 5);
  GstBuffer* copy = gst_buffer_copy(out);
  gst_buffer_unref(out);
  gst_harness_teardown(h);  // engine gone too: the copy's meta must keep its memory
  GstTorchTensorMeta* c = gst_buffer_get_torch_tensor_meta(copy);
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(c->tensors[0].name, "output");
  for (int i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(static_cast<const float*>(c->tensors[0].data)[i], values[i]);
  EXPECT_NE(gst_buffer_get_custom_meta(copy, GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
  gst_buffer_unref(copy);
}

TEST(TorchInfer, MultiOutputModelsGetNamedTensors) {
  const char* caps = "video/x-raw,format=BGR,width=32,height=32,framerate=30/1";
  GstHarness* h = torchinfer_harness("model=" + model("dict_output.pt"), caps);
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info_of(caps), 4));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->n_tensors, 2u);
  EXPECT_STREQ(m->tensors[0].name, "mean");
  EXPECT_STREQ(m->tensors[1].name, "sum");
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInfer, EveryPropertyHasABlurb) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  ASSERT_NE(e, nullptr);
  guint n = 0;
  GParamSpec** specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(e), &n);
  int ours = 0;
  for (guint i = 0; i < n; ++i) {
    if (specs[i]->owner_type != G_OBJECT_TYPE(e)) continue;
    ++ours;
    const char* blurb = g_param_spec_get_blurb(specs[i]);
    EXPECT_TRUE(blurb && std::strlen(blurb) > 15) << g_param_spec_get_name(specs[i]);
  }
  EXPECT_GE(ours, 20);
  g_free(specs);
  gst_object_unref(e);
}

// The loader keeps freed frames and activations in the process
// (src/engine/malloc_tuning.h): a 6 MB block comes from the heap, not a
// mapping of its own, and stays there once freed. glibc's defaults (128 KiB
// thresholds, raised only after a large mapped block is freed) would map
// it and give it back.
TEST(TorchInferLoader, FreedFramesStayInTheProcess) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);  // loads the plugin
  ASSERT_NE(e, nullptr);
  gst_object_unref(e);
  ASSERT_EQ(g_getenv("GLIBC_TUNABLES"), nullptr) << "the test needs glibc's defaults";
  constexpr std::size_t kBlock = 6u << 20;
  const std::size_t mapped = mallinfo2().hblks;
  void* p = std::malloc(kBlock);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBlock);
  EXPECT_EQ(mallinfo2().hblks, mapped);
  std::free(p);
  EXPECT_GE(mallinfo2().fordblks, kBlock);
}

// ---- negative -------------------------------------------------------------

TEST(TorchInferErrors, MissingOrUnsetModel) {
  const GQuark res = GST_RESOURCE_ERROR;
  expect_start_error("model=/nonexistent/net.pt", res, GST_RESOURCE_ERROR_NOT_FOUND,
                     "/nonexistent/net.pt");
  expect_start_error("", res, GST_RESOURCE_ERROR_NOT_FOUND, "model");
}

TEST(TorchInferErrors, CorruptModelFiles) {
  std::ifstream in(model("tiny_classifier.pt"), std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string flipped = good;
  flipped[good.size() / 4] ^= 0x20;
  const std::vector<std::string> files = {
      write_file("c_empty.pt", ""), write_file("c_garbage.pt", std::string(4096, '\x7f')),
      write_file("c_trunc.pt", good.substr(0, good.size() / 3)), write_file("c_flip.pt", flipped)};
  for (const auto& f : files)
    expect_start_error("model=" + f, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT, f);
}

TEST(TorchInferErrors, UnsupportedModelInterfaces) {
  expect_start_error("model=" + model("two_inputs.pt"), GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT,
                     "takes 2 inputs");
  expect_start_error("model=" + model("returns_string.pt"), GST_LIBRARY_ERROR,
                     GST_LIBRARY_ERROR_INIT, "must return a Tensor");
  expect_start_error("model=" + model("wrong_channels.pt"), GST_LIBRARY_ERROR,
                     GST_LIBRARY_ERROR_INIT, "1x3x16x16");
}

TEST(TorchInferErrors, BadSidecars) {
  const std::string m = "model=" + model("tiny_classifier.pt") + " model-config=";
  const auto bad_std = write_file("bad_std.json", R"({"std": [0.2, 0.0, 0.2]})");
  expect_start_error(m + bad_std, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "'std'");
  const auto not_json = write_file("not_json.json", "{ input_width: 3 ");
  expect_start_error(m + not_json, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
                     "not_json.json");
  const auto typo = write_file("typo.json", R"({"input_widht": 64})");
  expect_start_error(m + typo, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS, "'input_widht'");
  expect_start_error(m + "/nonexistent/cfg.json", GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
                     "cfg.json");
  expect_start_error("model=" + model("tiny_classifier.pt") + " labels=/nonexistent/labels.txt",
                     GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, "labels.txt");
}

TEST(TorchInferErrors, BadPropertyValuesRejectedWithWarning) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  g_object_set(e, "mean", "0.4,0.4,0.4", nullptr);
  {
    WarningCatcher w;
    for (const char* bad : {"abc", "0.1,0.2", "1,2,3,4", "0.5;0.5;0.5"})
      g_object_set(e, "mean", bad, nullptr);
    g_object_set(e, "std", "0.2,0,0.2", nullptr);
    g_object_set(e, "std", "-1", nullptr);
    EXPECT_EQ(w.messages().size(), 6u);
    if (!w.messages().empty()) {
      EXPECT_NE(w.messages()[0].find("'mean'"), std::string::npos) << w.messages()[0];
    }
  }
  gchar* mean = nullptr;
  gchar* std_v = nullptr;
  g_object_get(e, "mean", &mean, "std", &std_v, nullptr);
  EXPECT_STREQ(mean, "0.4,0.4,0.4");
  EXPECT_EQ(std_v, nullptr);
  g_free(mean);
  g_free(std_v);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "input-width", -5, "top-k", 5000, "pad-value", 256, nullptr);
    EXPECT_EQ(w.messages().size(), 3u);
  }
  int width = -1;
  g_object_get(e, "input-width", &width, nullptr);
  EXPECT_EQ(width, 0);
  gst_object_unref(e);
}

TEST(TorchInferErrors, SettingsLockedWhileRunning) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"), kRgb640);
  {
    WarningCatcher w;
    g_object_set(h->element, "input-width", 99, nullptr);
    EXPECT_EQ(w.messages().size(), 1u);
  }
  int width = -1;
  g_object_get(h->element, "input-width", &width, nullptr);
  EXPECT_EQ(width, 0);
  gst_harness_teardown(h);
}

TEST(TorchInferErrors, RefusesUnsupportedCaps) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  for (const char* caps :
       {"video/x-raw,format=NV16,width=64,height=48",
        "video/x-bayer,format=rggb16le,width=64,height=48",  // 8-bit Bayer only
        "audio/x-raw,format=S16LE,rate=48000,channels=1", "image/jpeg,width=64,height=48"}) {
    GstCaps* c = gst_caps_from_string(caps);
    EXPECT_FALSE(gst_pad_query_accept_caps(sink, c)) << caps;
    gst_caps_unref(c);
  }
  GstCaps* ok = gst_caps_from_string("video/x-raw,format=YUY2,width=64,height=48,framerate=30/1");
  EXPECT_TRUE(gst_pad_query_accept_caps(sink, ok));
  gst_caps_unref(ok);
  gst_object_unref(sink);
  gst_object_unref(e);
}

TEST(TorchInferErrors, ShortBufferIsAStreamErrorNotACrash) {
  GstHarness* h = torchinfer_harness("model=" + model("tiny_classifier.pt"), kRgb640);
  GstBuffer* tiny = gst_buffer_new_allocate(nullptr, 100, nullptr);
  EXPECT_EQ(gst_harness_push(h, tiny), GST_FLOW_ERROR);
  gst_harness_teardown(h);
}

TEST(TorchInferErrors, NonClassifierWarnsOnce) {
  const char* caps = "video/x-raw,format=RGB,width=16,height=16,framerate=30/1";
  GstHarness* h =
      torchinfer_harness("model=" + model("grid_probe.pt") + " task=classification", caps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  for (int i = 0; i < 3; ++i) {
    GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(info_of(caps), i));
    ASSERT_NE(out, nullptr);
    EXPECT_NE(gst_buffer_get_torch_tensor_meta(out), nullptr);
    EXPECT_EQ(gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
    gst_buffer_unref(out);
  }
  int warnings = 0;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    ++warnings;
    gst_message_unref(msg);
  }
  EXPECT_EQ(warnings, 1);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}
