// torchcodes through a GstHarness: symbols rendered here (tests/common/
// code_symbols.h) inside detection ROIs of YUY2 and NV12 frames, the
// track's memory, full-frame reading, and hostile inputs.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "code_symbols.h"
#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"

using namespace torchinfer::test;

namespace {

constexpr int kW = 400, kH = 200;
constexpr int kModule = 4, kQuiet = 2 * kModule;  // render_symbol's 2-module quiet zone

std::string caps_of(const char* format) {
  return std::string("video/x-raw,format=") + format + ",width=400,height=200,framerate=30/1";
}

// Two parts: a DataMatrix at (30, 60) and a QR code at (230, 50).
struct Scene {
  GreyCanvas canvas{kW, kH};
  GreyCanvas dm = render_symbol("DataMatrix", "SN-0001", kModule);
  GreyCanvas qr = render_symbol("QRCode", "LOT-77/B", kModule);
  Scene() {
    paste(canvas, dm, 30, 60);
    paste(canvas, qr, 230, 50);
  }
};

GstBuffer* buffer_of(const GreyCanvas& c, const char* format) {
  // NV12 and I420 share the layout of their Y plane (rows of the width,
  // 400 being a multiple of 4) and the size of their chroma; GRAY8 is the Y
  // plane alone.
  std::vector<std::uint8_t> bytes;
  const std::string f = format;
  if (f == "YUY2") {
    bytes = to_yuy2(c);
  } else {
    bytes = to_nv12(c, c.width);
    if (f == "GRAY8") bytes.resize(static_cast<std::size_t>(c.width) * c.height);
  }
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, bytes.size(), nullptr);
  gst_buffer_fill(buf, 0, bytes.data(), bytes.size());
  return buf;
}

// A torchnms-style detection ROI, with torchtrack's object_id when id > 0.
void add_part(GstBuffer* buf, const char* label, double x0, double y0, double x1, double y1,
              int id) {
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_torch_detection(buf, label, 0, 0.9, x0, y0, x1, y1, kW, kH);
  if (id > 0)
    gst_video_region_of_interest_meta_add_param(
        roi, gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, id,
                               "predicted", G_TYPE_BOOLEAN, FALSE, "age", G_TYPE_INT, 1, nullptr));
}

void add_two_parts(GstBuffer* buf, int first_id = 1) {
  add_part(buf, "part", 20, 40, 120, 160, first_id);
  add_part(buf, "part", 220, 30, 330, 170, first_id > 0 ? first_id + 1 : 0);
}

struct Code {
  std::string format, text;
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;
  guint64 frame = 0;
};

Code code_of(const GstStructure* s) {
  Code c;
  c.format = gst_structure_get_string(s, "format");
  c.text = gst_structure_get_string(s, "text");
  gst_structure_get_double(s, "x_min", &c.x_min);
  gst_structure_get_double(s, "y_min", &c.y_min);
  gst_structure_get_double(s, "x_max", &c.x_max);
  gst_structure_get_double(s, "y_max", &c.y_max);
  gst_structure_get_uint64(s, "frame", &c.frame);
  return c;
}

// Each detection ROI's code in ROI order; "" for a ROI without one.
std::vector<std::string> roi_texts(GstBuffer* buf, std::vector<Code>* codes = nullptr) {
  std::vector<std::string> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    const GstStructure* s =
        gst_torch_roi_get_code(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m));
    out.push_back(s ? gst_structure_get_string(s, "text") : "");
    if (s && codes) codes->push_back(code_of(s));
  }
  return out;
}

// The torchcodes inside the harness (gst_harness_new_parse wraps it in a bin).
guint64 figure(GstHarness* h, const char* name) {
  GstElement* e = gst_harness_find_element(h, "torchcodes");
  guint64 v = 0;
  g_object_get(e, name, &v, nullptr);
  gst_object_unref(e);
  return v;
}

// tried, read, failed, skipped-known.
std::vector<guint64> figures(GstHarness* h) {
  return {figure(h, "tried"), figure(h, "read"), figure(h, "failed"), figure(h, "skipped-known")};
}

GstHarness* codes_harness(const std::string& props, const char* format) {
  GstHarness* h = gst_harness_new_parse(("torchcodes " + props).c_str());
  gst_harness_set_src_caps_str(h, caps_of(format).c_str());
  return h;
}

class TorchCodesFormats : public ::testing::TestWithParam<const char*> {};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Luma, TorchCodesFormats,
                         ::testing::Values("YUY2", "NV12", "I420", "GRAY8"));

TEST_P(TorchCodesFormats, EachRoiGetsTheExactTextAndBoxOfItsSymbol) {
  const Scene scene;
  GstHarness* h = codes_harness("", GetParam());
  GstBuffer* in = buffer_of(scene.canvas, GetParam());
  add_two_parts(in);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  std::vector<Code> codes;
  EXPECT_EQ(roi_texts(out, &codes), (std::vector<std::string>{"SN-0001", "LOT-77/B"}));
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0].format, "DataMatrix");
  EXPECT_EQ(codes[1].format, "QRCode");
  // The symbols proper, inside their quiet zones, in frame pixels.
  EXPECT_EQ(codes[0].x_min, 30 + kQuiet);
  EXPECT_EQ(codes[0].y_min, 60 + kQuiet);
  EXPECT_EQ(codes[0].x_max, 30 + scene.dm.width - kQuiet);
  EXPECT_EQ(codes[0].y_max, 60 + scene.dm.height - kQuiet);
  EXPECT_EQ(codes[0].frame, 1u);
  EXPECT_EQ(gst_buffer_get_torch_codes(out), nullptr);  // ROIs: no full-frame read
  EXPECT_EQ(figures(h), (std::vector<guint64>{2, 2, 0, 0}));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST_P(TorchCodesFormats, ThePixelsPassUntouched) {
  const Scene scene;
  GstHarness* h = codes_harness("", GetParam());
  GstBuffer* in = buffer_of(scene.canvas, GetParam());
  add_two_parts(in);
  GstMapInfo map;
  gst_buffer_map(in, &map, GST_MAP_READ);
  const std::vector<guint8> before(map.data, map.data + map.size);
  gst_buffer_unmap(in, &map);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  gst_buffer_map(out, &map, GST_MAP_READ);
  EXPECT_EQ(std::vector<guint8>(map.data, map.data + map.size), before);
  gst_buffer_unmap(out, &map);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchCodes, ATracksCodeIsReadOnceAndCarriedUntilTheRereadInterval) {
  const Scene scene;
  GstHarness* h = codes_harness("reread-interval=3", "YUY2");
  const GreyCanvas blank(kW, kH);  // later views show no symbol: only the memory names them
  for (int n = 1; n <= 4; ++n) {
    GstBuffer* in = buffer_of(n == 1 ? scene.canvas : blank, "YUY2");
    add_two_parts(in);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    std::vector<Code> codes;
    EXPECT_EQ(roi_texts(out, &codes), (std::vector<std::string>{"SN-0001", "LOT-77/B"})) << n;
    EXPECT_EQ(codes.at(0).frame, 1u) << n;
    gst_buffer_unref(out);
    if (n == 3) EXPECT_EQ(figures(h), (std::vector<guint64>{2, 2, 0, 4}));
  }
  // Frame 4 re-read both (3 frames after the read) and missed: counted.
  EXPECT_EQ(figures(h), (std::vector<guint64>{4, 2, 2, 4}));
  gst_harness_teardown(h);
}

TEST(TorchCodes, UntrackedRoisAreReadOnEveryFrame) {
  const Scene scene;
  GstHarness* h = codes_harness("", "NV12");
  for (int n = 0; n < 2; ++n) {
    GstBuffer* in = buffer_of(scene.canvas, "NV12");
    add_two_parts(in, 0);
    gst_buffer_unref(gst_harness_push_and_pull(h, in));
  }
  EXPECT_EQ(figures(h), (std::vector<guint64>{4, 4, 0, 0}));
  gst_harness_teardown(h);
}

TEST(TorchCodes, ObjectClassLimitsTheRoisRead) {
  const Scene scene;
  GstHarness* h = codes_harness("object-class=box", "YUY2");
  GstBuffer* in = buffer_of(scene.canvas, "YUY2");
  add_part(in, "part", 20, 40, 120, 160, 1);
  add_part(in, "box", 220, 30, 330, 170, 2);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  EXPECT_EQ(roi_texts(out), (std::vector<std::string>{"", "LOT-77/B"}));
  EXPECT_EQ(figures(h), (std::vector<guint64>{1, 1, 0, 0}));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchCodes, AFrameWithoutRoisIsReadWhole) {
  GreyCanvas c(kW, kH);
  const GreyCanvas qr = render_symbol("QRCode", "WHOLE-FRAME", kModule);
  paste(c, qr, 150, 100 - qr.height / 2);
  GstHarness* h = codes_harness("", "NV12");
  GstBuffer* out = gst_harness_push_and_pull(h, buffer_of(c, "NV12"));
  const GstStructure* s = gst_buffer_get_torch_codes(out);
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(gst_structure_get_name(s), "codes");
  const GValue* list = gst_structure_get_value(s, "codes");
  ASSERT_EQ(gst_value_array_get_size(list), 1u);
  const Code code = code_of(gst_value_get_structure(gst_value_array_get_value(list, 0)));
  EXPECT_EQ(code.text, "WHOLE-FRAME");
  EXPECT_EQ(code.format, "QRCode");
  EXPECT_EQ(code.x_min, 150 + kQuiet);
  EXPECT_EQ(code.x_max, 150 + qr.width - kQuiet);
  gst_buffer_unref(out);
  // full-frame=never: nothing read, no meta.
  gst_harness_teardown(h);
  h = codes_harness("full-frame=never", "NV12");
  out = gst_harness_push_and_pull(h, buffer_of(c, "NV12"));
  EXPECT_EQ(gst_buffer_get_torch_codes(out), nullptr);
  EXPECT_EQ(figure(h, "tried"), 0u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchCodes, FullFrameAlwaysIgnoresTheRois) {
  const Scene scene;
  GstHarness* h = codes_harness("full-frame=always formats=QRCode", "YUY2");
  GstBuffer* in = buffer_of(scene.canvas, "YUY2");
  add_two_parts(in);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  EXPECT_EQ(roi_texts(out), (std::vector<std::string>{"", ""}));
  const GValue* list = gst_structure_get_value(gst_buffer_get_torch_codes(out), "codes");
  ASSERT_EQ(gst_value_array_get_size(list), 1u);
  EXPECT_STREQ(
      gst_structure_get_string(gst_value_get_structure(gst_value_array_get_value(list, 0)), "text"),
      "LOT-77/B");
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// Reading on workers, with a budget that is never reached: the same codes
// on the same frames as on the streaming thread.
TEST(TorchCodesWorkers, WithinTheBudgetTheFramesGetTheirOwnCodes) {
  const Scene scene;
  GstHarness* h = codes_harness("workers=2 budget-ms=10000 reread-interval=2", "NV12");
  const GreyCanvas blank(kW, kH);
  for (int n = 1; n <= 3; ++n) {
    GstBuffer* in = buffer_of(n == 1 ? scene.canvas : blank, "NV12");
    add_two_parts(in);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    std::vector<Code> codes;
    EXPECT_EQ(roi_texts(out, &codes), (std::vector<std::string>{"SN-0001", "LOT-77/B"})) << n;
    EXPECT_EQ(codes.at(1).frame, 1u);
    EXPECT_EQ(codes.at(0).x_min, 30 + kQuiet);
    gst_buffer_unref(out);
  }
  // Frame 3 re-read both on blank views: failed, the codes carried.
  EXPECT_EQ(figures(h), (std::vector<guint64>{4, 2, 2, 2}));
  EXPECT_EQ(figure(h, "late"), 0u);
  EXPECT_EQ(figure(h, "deferred"), 0u);
  gst_harness_teardown(h);
}

TEST(TorchCodesWorkers, AFrameReadWholeOnWorkers) {
  GreyCanvas c(kW, kH);
  paste(c, render_symbol("QRCode", "WHOLE-FRAME", kModule), 150, 60);
  GstHarness* h = codes_harness("workers=1 budget-ms=10000", "YUY2");
  GstBuffer* out = gst_harness_push_and_pull(h, buffer_of(c, "YUY2"));
  const GValue* list = gst_structure_get_value(gst_buffer_get_torch_codes(out), "codes");
  ASSERT_EQ(gst_value_array_get_size(list), 1u);
  EXPECT_STREQ(
      gst_structure_get_string(gst_value_get_structure(gst_value_array_get_value(list, 0)), "text"),
      "WHOLE-FRAME");
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// ---- negative -------------------------------------------------------------

TEST(TorchCodesHostile, AnUnknownFormatIsRefusedAndThePreviousKept) {
  GstElement* e = gst_element_factory_make("torchcodes", nullptr);
  g_object_set(e, "formats", "QRCode", nullptr);
  {
    WarningCatcher w;
    g_object_set(e, "formats", "QRCode,Barcode9000", nullptr);
    ASSERT_EQ(w.messages().size(), 1u);
    EXPECT_NE(w.messages()[0].find("barcode9000"), std::string::npos) << w.messages()[0];
  }
  gchar* f = nullptr;
  g_object_get(e, "formats", &f, nullptr);
  EXPECT_STREQ(f, "QRCode");
  g_free(f);
  gst_object_unref(e);
}

TEST(TorchCodesHostile, OutOfRangeValuesAreRefusedByGObject) {
  GstElement* e = gst_element_factory_make("torchcodes", nullptr);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "padding", 1.5, nullptr);
    g_object_set(e, "padding", -0.1, nullptr);
    EXPECT_EQ(w.messages().size(), 2u);
  }
  double padding = 0;
  g_object_get(e, "padding", &padding, nullptr);
  EXPECT_EQ(padding, 0.1);
  gst_object_unref(e);
}

TEST(TorchCodesHostile, ARoiOutsideTheFrameAndNoiseAreCountedFailures) {
  GreyCanvas c(kW, kH);
  noise(c, 0, 0, kW, kH, 3);
  GstHarness* h = codes_harness("try-invert=true", "YUY2");
  GstBuffer* in = buffer_of(c, "YUY2");
  add_part(in, "part", 20, 40, 120, 160, 1);  // noise
  // A ROI meta past the frame's edge (not torchnms's clipping: another
  // element's).
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_video_region_of_interest_meta(in, "part", 5000, 5000, 40, 40);
  gst_video_region_of_interest_meta_add_param(
      roi, gst_structure_new(GST_TORCH_DETECTION_STRUCTURE_NAME, "label", G_TYPE_STRING, "part",
                             nullptr));
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  EXPECT_EQ(roi_texts(out), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(figures(h), (std::vector<guint64>{2, 0, 2, 0}));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// 10 000 small untracked ROIs on one frame (a detector gone wild): each is
// read and counted, the two with symbols among them get their codes.
TEST(TorchCodesHostile, TenThousandRoisOnOneFrame) {
  const Scene scene;
  GstHarness* h = codes_harness("padding=0", "GRAY8");
  GstBuffer* in = buffer_of(scene.canvas, "GRAY8");
  add_two_parts(in, 0);
  for (int i = 0; i < 9998; ++i) {
    const double x = (i % 100) * 4, y = (i / 100) * 2;
    add_part(in, "part", x, y, x + 3, y + 2, 0);
  }
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  const std::vector<std::string> texts = roi_texts(out);
  ASSERT_EQ(texts.size(), 10000u);
  EXPECT_EQ(texts[0], "SN-0001");
  EXPECT_EQ(texts[1], "LOT-77/B");
  EXPECT_EQ(std::count(texts.begin(), texts.end(), ""), 9998);
  EXPECT_EQ(figures(h), (std::vector<guint64>{10000, 2, 9998, 0}));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchCodesHostile, AShortBufferPassesWithAWarningAndCounts) {
  GstHarness* h = codes_harness("", "NV12");
  GstElement* e = gst_harness_find_element(h, "torchcodes");
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  GstBuffer* out = gst_harness_push_and_pull(h, gst_buffer_new_allocate(nullptr, 100, nullptr));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(gst_buffer_get_size(out), 100u);
  EXPECT_EQ(figures(h), (std::vector<guint64>{1, 0, 1, 0}));
  GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING);
  ASSERT_NE(m, nullptr);
  GError* err = nullptr;
  gst_message_parse_warning(m, &err, nullptr);
  EXPECT_NE(std::string(err->message).find("smaller than its caps"), std::string::npos);
  g_error_free(err);
  gst_message_unref(m);
  gst_buffer_unref(out);
  gst_element_set_bus(e, nullptr);
  gst_object_unref(bus);
  gst_object_unref(e);
  gst_harness_teardown(h);
}

TEST(TorchCodesHostile, CapsItCannotReadAreRefused) {
  GstHarness* h = gst_harness_new("torchcodes");
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=64,height=64,framerate=30/1");
  EXPECT_NE(gst_harness_push(h, gst_buffer_new_allocate(nullptr, 64 * 64 * 3, nullptr)),
            GST_FLOW_OK);
  gst_harness_teardown(h);
}
