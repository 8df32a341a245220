// torchinfer inference-region=roi-list: one inference per region-of-interest
// meta, cropped straight from the camera format. Crop exactness is checked
// against cropping the frame by hand and inferring the whole cropped frame
// (roi_identity.pt returns exactly what it saw); labels with
// channel_classifier.pt, whose label is the region's dominant colour.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "preprocess/pixel_format.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

struct Rgb {
  guint8 r, g, b;
};
constexpr Rgb kRed{255, 0, 0}, kGreen{0, 255, 0}, kBlue{0, 0, 255};

std::string rgb_caps(int w, int h) {
  return "video/x-raw,format=RGB,width=" + std::to_string(w) + ",height=" + std::to_string(h) +
         ",framerate=30/1";
}

struct Paint {
  int x, y, w, h;
  Rgb c;
};

// An RGB frame painted with rectangles (black elsewhere).
GstBuffer* painted(const GstVideoInfo& info, const std::vector<Paint>& paints,
                   GstClockTime pts = 0) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame f;
  EXPECT_TRUE(gst_video_frame_map(&f, const_cast<GstVideoInfo*>(&info), buf, GST_MAP_WRITE));
  auto* data = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0);
  std::memset(data, 0, static_cast<std::size_t>(stride) * GST_VIDEO_INFO_HEIGHT(&info));
  for (const Paint& p : paints)
    for (int y = p.y; y < p.y + p.h; ++y)
      for (int x = p.x; x < p.x + p.w; ++x) {
        guint8* px = data + y * stride + x * 3;
        px[0] = p.c.r, px[1] = p.c.g, px[2] = p.c.b;
      }
  gst_video_frame_unmap(&f);
  GST_BUFFER_PTS(buf) = pts;
  return buf;
}

// A plain ROI meta (no detection param) with the given id and, optionally,
// torchtrack's object_id param.
GstVideoRegionOfInterestMeta* add_roi(GstBuffer* buf, const char* type, guint x, guint y, guint w,
                                      guint h, int id, std::optional<int> object_id = {}) {
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_video_region_of_interest_meta(buf, type, x, y, w, h);
  roi->id = id;
  if (object_id)
    gst_video_region_of_interest_meta_add_param(
        roi, gst_structure_new("object_id", "id", G_TYPE_INT, *object_id, "predicted",
                               G_TYPE_BOOLEAN, FALSE, "age", G_TYPE_INT, 1, nullptr));
  return roi;
}

std::vector<GstVideoRegionOfInterestMeta*> rois_of(GstBuffer* buf) {
  std::vector<GstVideoRegionOfInterestMeta*> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(buf, &iter,
                                                       GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    out.push_back(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m));
  return out;
}

int count_tensor_metas(GstBuffer* buf) {
  int n = 0;
  gpointer iter = nullptr;
  while (gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) ++n;
  return n;
}

std::string label_of(GstVideoRegionOfInterestMeta* roi) {
  const GstStructure* s = gst_torch_roi_get_classification(roi, nullptr);
  if (!s) return "(none)";
  const gchar* l = gst_structure_get_string(s, "label");
  return l ? l : "(no label)";
}

bool inferred_of(GstVideoRegionOfInterestMeta* roi) {
  gboolean v = FALSE;
  const GstStructure* s = gst_torch_roi_get_classification(roi, nullptr);
  EXPECT_TRUE(s && gst_structure_get_boolean(s, "inferred", &v));
  return v;
}

guint64 stat_of(GstHarness* h, const char* field) {
  GstStructure* st = nullptr;
  g_object_get(h->element, "stats", &st, nullptr);
  guint64 v = G_MAXUINT64;
  EXPECT_TRUE(st && gst_structure_get_uint64(st, field, &v)) << field;
  if (st) gst_structure_free(st);
  return v;
}

GstHarness* classifier(const std::string& extra, const std::string& caps) {
  return torchinfer_harness(
      "name=cls model=" + model("channel_classifier.pt") + " inference-region=roi-list " + extra,
      caps);
}

// ---- crop exactness, every pixel format ----------------------------------

// The frame's pixels of a region, copied by hand into a frame of their own,
// starting where the preprocessing starts (x, y rounded down to the
// format's chroma alignment).
GstBuffer* crop_by_hand(GstBuffer* src, const GstVideoInfo& src_info, PixelFormat pf, int x, int y,
                        int w, int h, GstVideoInfo* out_info) {
  const PixelLayout& L = layout_of(pf);
  const int x0 = x / L.x_align * L.x_align, y0 = y / L.y_align * L.y_align;
  const int cw = x + w - x0, ch = y + h - y0;
  gst_video_info_set_format(out_info, GST_VIDEO_INFO_FORMAT(&src_info), cw, ch);
  GstBuffer* dst = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(out_info), nullptr);
  GstVideoFrame s, d;
  EXPECT_TRUE(gst_video_frame_map(&s, const_cast<GstVideoInfo*>(&src_info), src, GST_MAP_READ));
  EXPECT_TRUE(gst_video_frame_map(&d, out_info, dst, GST_MAP_WRITE));
  for (int p = 0; p < L.n_planes; ++p) {
    const int px = L.plane_half_w[p] ? x0 / 2 : x0, py = L.plane_half_h[p] ? y0 / 2 : y0;
    const int row_bytes = (L.plane_half_w[p] ? (cw + 1) / 2 : cw) * L.plane_bpp[p];
    const int rows = L.plane_half_h[p] ? (ch + 1) / 2 : ch;
    const auto* sp = static_cast<const guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&s, p));
    auto* dp = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&d, p));
    const int ss = GST_VIDEO_FRAME_PLANE_STRIDE(&s, p), ds = GST_VIDEO_FRAME_PLANE_STRIDE(&d, p);
    for (int r = 0; r < rows; ++r)
      std::memcpy(dp + r * ds, sp + (py + r) * ss + px * L.plane_bpp[p], row_bytes);
  }
  gst_video_frame_unmap(&d);
  gst_video_frame_unmap(&s);
  return dst;
}

class RoiCropExactness : public testing::TestWithParam<PixelFormatInfo> {};

TEST_P(RoiCropExactness, RegionEqualsFullFrameInferenceOnTheCroppedFrame) {
  const PixelFormatInfo fmt = GetParam();
  const int W = 97, H = 75;  // odd on purpose
  const std::string caps = std::string("video/x-raw,format=") + fmt.name +
                           ",width=" + std::to_string(W) + ",height=" + std::to_string(H) +
                           ",framerate=30/1,colorimetry=bt601";
  const GstVideoInfo info = info_of(caps);
  // Odd corners and sizes, the whole frame, a region at the far edges and
  // one smaller than the model input (upsampled).
  const struct {
    int x, y, w, h;
  } regions[] = {{13, 7, 41, 29}, {0, 0, W, H}, {61, 49, 36, 26}, {5, 3, 3, 2}};

  GstHarness* roi_h = torchinfer_harness(
      "model=" + model("roi_identity.pt") + " inference-region=roi-list batch-size=4", caps);
  GstBuffer* frame = make_video_buffer(info, 11);
  GstBuffer* in = gst_buffer_copy(frame);
  for (int i = 0; i < 4; ++i)
    add_roi(in, "part", regions[i].x, regions[i].y, regions[i].w, regions[i].h, i);
  GstBuffer* out = gst_harness_push_and_pull(roi_h, in);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out), nullptr) << "no whole-frame result";

  GstHarness* ref_h = torchinfer_harness("model=" + model("roi_identity.pt"), caps);
  const PixelLayout& L = fmt.layout;
  for (int i = 0; i < 4; ++i) {
    const auto& r = regions[i];
    GstVideoInfo cinfo;
    GstBuffer* cropped = crop_by_hand(frame, info, fmt.format, r.x, r.y, r.w, r.h, &cinfo);
    GstCaps* cc = gst_video_info_to_caps(&cinfo);
    gst_harness_set_src_caps(ref_h, cc);
    GstBuffer* ref = gst_harness_push_and_pull(ref_h, cropped);
    ASSERT_NE(ref, nullptr);
    GstTorchTensorMeta* want = gst_buffer_get_torch_tensor_meta(ref);
    GstTorchTensorMeta* got = gst_buffer_get_torch_tensor_meta_for_roi(out, i, nullptr);
    ASSERT_NE(want, nullptr);
    ASSERT_NE(got, nullptr) << fmt.name << " region " << i;
    EXPECT_EQ(got->roi_id, i);
    EXPECT_EQ(got->frame_width, static_cast<guint>(W));
    ASSERT_EQ(got->tensors[0].size, want->tensors[0].size);
    const auto* a = static_cast<const float*>(got->tensors[0].data);
    const auto* b = static_cast<const float*>(want->tensors[0].data);
    int bad = 0;
    for (gsize k = 0; k < got->tensors[0].size / sizeof(float); ++k)
      if (std::abs(a[k] - b[k]) > 1e-6f) ++bad;
    EXPECT_EQ(bad, 0) << fmt.name << " region " << i << " (" << r.x << "," << r.y << "," << r.w
                      << "," << r.h << ")";
    // The transform maps frame pixels into this region's model input.
    const int x0 = r.x / L.x_align * L.x_align;
    EXPECT_DOUBLE_EQ(got->transform.scale_x, 16.0 / (r.x + r.w - x0));
    EXPECT_DOUBLE_EQ(got->transform.offset_x, -x0 * got->transform.scale_x);
    gst_buffer_unref(ref);
  }
  gst_buffer_unref(out);
  gst_buffer_unref(frame);
  gst_harness_teardown(ref_h);
  gst_harness_teardown(roi_h);
}

// video/x-raw formats; Bayer (video/x-bayer caps, whole-cell regions) is
// checked in test_torchinfer_formats.cpp.
std::vector<PixelFormatInfo> raw_formats() {
  std::vector<PixelFormatInfo> v;
  for (const PixelFormatInfo& e : kPixelFormats)
    if (!is_bayer(e.format)) v.push_back(e);
  return v;
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, RoiCropExactness, testing::ValuesIn(raw_formats()),
                         [](const testing::TestParamInfo<PixelFormatInfo>& i) {
                           return std::string(i.param.name);
                         });

// ---- the classification contract ----------------------------------------

TEST(TorchInferRoi, EachRegionGetsItsOwnClassificationParam) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("batch-size=4", caps);
  GstBuffer* in = painted(info, {{0, 0, 32, 48, kRed}, {32, 0, 32, 48, kBlue}});
  add_roi(in, "part", 0, 0, 32, 48, 0);
  add_roi(in, "part", 32, 0, 32, 48, 1);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  const auto rois = rois_of(out);
  ASSERT_EQ(rois.size(), 2u);
  const GstStructure* c = gst_torch_roi_get_classification(rois[0], "cls");
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(gst_structure_get_string(c, "label"), "red");
  int id = -1;
  double conf = 0;
  EXPECT_TRUE(gst_structure_get_int(c, "label_id", &id));
  EXPECT_EQ(id, 0);
  EXPECT_TRUE(gst_structure_get_double(c, "confidence", &conf));
  EXPECT_GT(conf, 0.99);
  EXPECT_EQ(gst_structure_get_string(c, "model"), model("channel_classifier.pt"));
  EXPECT_STREQ(gst_structure_get_string(c, "model-instance-id"), "");
  EXPECT_STREQ(gst_structure_get_string(c, "element"), "cls");
  EXPECT_TRUE(inferred_of(rois[0]));
  guint64 pts = 1;
  EXPECT_TRUE(gst_structure_get_uint64(c, "result-pts", &pts));
  EXPECT_EQ(pts, 0u);
  EXPECT_EQ(gst_value_array_get_size(gst_structure_get_value(c, "labels")), 3u);
  EXPECT_EQ(label_of(rois[1]), "blue");
  // The raw scores, by ROI id; no whole-frame result and no frame-level
  // classification meta.
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 1, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->roi_id, 1);
  EXPECT_TRUE(t->inferred);
  const auto* scores = static_cast<const float*>(t->tensors[0].data);
  EXPECT_FLOAT_EQ(scores[2], 20.f);
  EXPECT_FLOAT_EQ(scores[0], 0.f);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta_for_roi(out, 1, "other.pt"), nullptr);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out), nullptr);
  EXPECT_EQ(gst_buffer_get_custom_meta(out, GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 2u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferRoi, TwoClassifiersCoexistAndARerunReplacesItsOwn) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  const std::string m = model("channel_classifier.pt");
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer name=first inference-region=roi-list model=" + m +
       " ! torchinfer name=second inference-region=roi-list model-instance-id=shape model=" + m)
          .c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer* in = painted(info, {{0, 0, 64, 48, kGreen}});
  add_roi(in, "part", 8, 8, 16, 16, 0);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  // Again through both: each replaces its own structure.
  out = gst_harness_push_and_pull(h, out);
  ASSERT_NE(out, nullptr);
  const auto rois = rois_of(out);
  ASSERT_EQ(rois.size(), 1u);
  std::vector<std::string> elements;
  gpointer state = nullptr;
  while (const GstStructure* s = gst_torch_roi_iterate_classifications(rois[0], &state)) {
    elements.push_back(gst_structure_get_string(s, "element"));
    EXPECT_STREQ(gst_structure_get_string(s, "label"), "green");
  }
  EXPECT_EQ(elements, (std::vector<std::string>{"first", "second"}));
  EXPECT_STREQ(gst_structure_get_string(gst_torch_roi_get_classification(rois[0], "second"),
                                        "model-instance-id"),
               "shape");
  EXPECT_EQ(gst_torch_roi_get_classification(rois[0], "third"), nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// ---- which regions are inferred ------------------------------------------

TEST(TorchInferRoi, ObjectClassFiltersOnTheDetectionLabelElseTheRoiType) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("object-class=\"bolt, washer\"", caps);
  GstBuffer* in = painted(info, {{0, 0, 64, 48, kRed}});
  add_roi(in, "bolt", 0, 0, 8, 8, 0);                                          // roi_type bolt
  add_roi(in, "nut", 8, 0, 8, 8, 1);                                           // not listed
  gst_buffer_add_torch_detection(in, "washer", 2, 0.9, 16, 0, 24, 8, 64, 48);  // label washer
  gst_buffer_add_torch_detection(in, "nut", 1, 0.9, 24, 0, 32, 8, 64, 48);     // label nut
  rois_of(in)[3]->roi_type = g_quark_from_string("bolt");  // the detection's label wins
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  const auto rois = rois_of(out);
  ASSERT_EQ(rois.size(), 4u);
  EXPECT_EQ(label_of(rois[0]), "red");
  EXPECT_EQ(label_of(rois[1]), "(none)");
  EXPECT_EQ(label_of(rois[2]), "red");
  EXPECT_EQ(label_of(rois[3]), "(none)");
  EXPECT_EQ(g_list_length(rois[1]->params), 0u) << "filtered ROIs are left untouched";
  EXPECT_EQ(count_tensor_metas(out), 2);
  EXPECT_EQ(stat_of(h, "regions-filtered"), 2u);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 2u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// object-class naming no class ("," or " , ,") would infer every region:
// refused like any bad value (a warning, the previous value kept). NULL
// unsets it (the sidecar's object_classes apply); "" is kept and reads back
// "": every region, whatever the sidecar says (test_torchinfer_contract.cpp).
TEST(TorchInferRoi, ObjectClassNamingNoClassIsRefused) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  g_object_set(e, "object-class", "bolt", nullptr);
  for (const std::string bad : {",", " , ,", " ", ",,\t,"}) {
    WarningCatcher w;
    g_object_set(e, "object-class", bad.c_str(), nullptr);
    ASSERT_EQ(w.messages().size(), 1u) << "'" << bad << "'";
    EXPECT_NE(w.messages()[0].find("rejected value '" + bad +
                                   "' for property 'object-class': it names no class"),
              std::string::npos)
        << w.messages()[0];
    gchar* now = nullptr;
    g_object_get(e, "object-class", &now, nullptr);
    EXPECT_STREQ(now, "bolt") << "'" << bad << "'";
    g_free(now);
  }
  for (const char* unset : {"", static_cast<const char*>(nullptr)}) {
    g_object_set(e, "object-class", "bolt", nullptr);
    WarningCatcher w;
    g_object_set(e, "object-class", unset, nullptr);
    EXPECT_TRUE(w.messages().empty());
    gchar* now = reinterpret_cast<gchar*>(1);
    g_object_get(e, "object-class", &now, nullptr);
    EXPECT_STREQ(now, unset);
    g_free(now);
  }
  gst_object_unref(e);
}

// The warnings posted on `bus`: message and debug text.
std::vector<std::pair<std::string, std::string>> warnings_on(GstBus* bus) {
  std::vector<std::pair<std::string, std::string>> out;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_warning(msg, &err, &dbg);
    out.emplace_back(err->message, dbg ? dbg : "");
    g_error_free(err);
    g_free(dbg);
    gst_message_unref(msg);
  }
  return out;
}

// Two frames through a classifier with `object_class`, each carrying the
// full-frame tensor meta of the detector that found its regions
// (yolo_candidates.pt: labels bolt, nut, washer); the warnings it posted.
std::vector<std::pair<std::string, std::string>> object_class_warnings(
    const std::string& object_class) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("object-class=\"" + object_class + "\"", caps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  for (int i = 0; i < 2; ++i) {
    GstBuffer* in = painted(info, {{0, 0, 64, 48, kRed}}, i * GST_SECOND / 30);
    GstTorchTensorMeta* tm = gst_buffer_add_torch_tensor_meta(in, 0, nullptr);
    tm->model = g_strdup(model("yolo_candidates.pt").c_str());
    add_roi(in, "bolt", 0, 0, 8, 8, 0);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    EXPECT_NE(out, nullptr);
    if (out) gst_buffer_unref(out);
  }
  auto w = warnings_on(bus);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  return w;
}

// A class the detector does not have (a typo) would never match: one
// WARNING per such class, naming it and the detector, listing its labels;
// once per run, not per frame. Known classes raise none.
TEST(TorchInferRoi, ObjectClassTheDetectorLacksIsAWarningNamingIt) {
  const auto w = object_class_warnings("bolt, bolts,washr");
  ASSERT_EQ(w.size(), 2u);
  const std::string detector = model("yolo_candidates.pt");
  EXPECT_EQ(w[0].first, "object-class 'bolts' is not a label of '" + detector +
                            "', which found the regions: no region will match it.");
  EXPECT_EQ(w[1].first, "object-class 'washr' is not a label of '" + detector +
                            "', which found the regions: no region will match it.");
  EXPECT_NE(w[0].second.find("its labels: bolt, nut, washer"), std::string::npos) << w[0].second;
  EXPECT_TRUE(object_class_warnings("bolt,washer").empty());
}

// A detector given where a classifier belongs: its tensors go on each
// region (roi_id) but no classification. One WARNING for the stream, not
// one per frame, naming the model; the regions stay counted as inferred.
TEST(TorchInferRoi, DetectorInRoiListWarnsOnceThatNoRegionIsClassified) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  const std::string m = model("yolo_candidates.pt");
  GstHarness* h = torchinfer_harness("model=" + m + " inference-region=roi-list", caps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  for (int i = 0; i < 3; ++i) {
    GstBuffer* in = painted(info, {{0, 0, 64, 48, kRed}}, i * GST_SECOND / 30);
    add_roi(in, "part", 0, 0, 32, 24, 0);
    add_roi(in, "part", 32, 24, 32, 24, 1);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    const auto rois = rois_of(out);
    ASSERT_EQ(rois.size(), 2u);
    EXPECT_EQ(label_of(rois[0]), "(none)");
    EXPECT_EQ(label_of(rois[1]), "(none)");
    EXPECT_EQ(count_tensor_metas(out), 2) << "the detector's output, per region";
    gst_buffer_unref(out);
  }
  const auto warnings = warnings_on(bus);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 6u);
  gst_harness_teardown(h);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].first,
            "Model '" + m +
                "' is not a classifier: inference-region=roi-list attaches no classification "
                "to the regions it infers (only their tensor metas).");
  EXPECT_NE(warnings[0].second.find("2 regions on this frame"), std::string::npos)
      << warnings[0].second;
}

// A classifier's regions raise no such warning.
TEST(TorchInferRoi, ClassifierInRoiListRaisesNoWarning) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("", caps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  GstBuffer* in = painted(info, {{0, 0, 64, 48, kRed}});
  add_roi(in, "part", 0, 0, 32, 24, 0);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(label_of(rois_of(out)[0]), "red");
  gst_buffer_unref(out);
  GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING);
  EXPECT_EQ(msg, nullptr);
  if (msg) gst_message_unref(msg);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(TorchInferRoi, MinObjectSizeSkipsTinyBoxesAndPaddingGrowsTheCrop) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = torchinfer_harness("model=" + model("roi_identity.pt") +
                                         " inference-region=roi-list min-object-size=5 "
                                         "object-padding=0.5",
                                     caps);
  GstBuffer* in = painted(info, {});
  add_roi(in, "a", 0, 0, 4, 10, 0);   // too narrow
  add_roi(in, "a", 20, 10, 8, 6, 1);  // padded to 16,7 .. 32,19
  add_roi(in, "a", 60, 40, 5, 5, 2);  // 4 px left inside the frame: too small
  add_roi(in, "a", 0, 40, 10, 8, 3);  // padded, clipped at the left and bottom
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta_for_roi(out, 0, nullptr), nullptr);
  EXPECT_EQ(gst_buffer_get_torch_tensor_meta_for_roi(out, 2, nullptr), nullptr);
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 1, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->transform.scale_x, 1.0);  // 16 px wide -> 16
  EXPECT_DOUBLE_EQ(t->transform.offset_x, -16.0);
  EXPECT_DOUBLE_EQ(t->transform.scale_y, 1.0);  // 12 px high -> 12
  EXPECT_DOUBLE_EQ(t->transform.offset_y, -7.0);
  t = gst_buffer_get_torch_tensor_meta_for_roi(out, 3, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->transform.scale_x, 16.0 / 15);  // 0 .. 15
  EXPECT_DOUBLE_EQ(t->transform.offset_x, 0.0);
  EXPECT_DOUBLE_EQ(t->transform.scale_y, 12.0 / 12);  // 36 .. 48
  EXPECT_DOUBLE_EQ(t->transform.offset_y, -36.0);
  EXPECT_EQ(stat_of(h, "regions-skipped"), 2u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferRoi, RegionsOutsideOrEmptyAreSkippedAndPartlyOutsideAreClipped) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h =
      torchinfer_harness("model=" + model("roi_identity.pt") + " inference-region=roi-list", caps);
  GstBuffer* in = painted(info, {});
  add_roi(in, "a", 56, 40, 16, 16, 0);    // clipped to 56,40 8x8
  add_roi(in, "a", 100, 100, 10, 10, 1);  // wholly outside
  add_roi(in, "a", 10, 10, 0, 5, 2);      // zero width
  add_roi(in, "a", 64, 0, 5, 5, 3);       // starts at the right edge
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 0, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->transform.scale_x, 2.0);
  EXPECT_DOUBLE_EQ(t->transform.offset_x, -112.0);
  EXPECT_DOUBLE_EQ(t->transform.scale_y, 1.5);
  EXPECT_DOUBLE_EQ(t->transform.offset_y, -60.0);
  EXPECT_EQ(count_tensor_metas(out), 1);
  EXPECT_EQ(stat_of(h, "regions-skipped"), 3u);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 1u);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferRoi, FramesWithoutRegionsPassThroughInOrderAndAreCounted) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("batch-size=4 object-class=bolt", caps);
  // A frame with a region between two without (one has only a filtered
  // region): all leave in order, with a result only on the region.
  GstBuffer* a = painted(info, {}, 0);
  GstBuffer* b = painted(info, {{0, 0, 64, 48, kBlue}}, 1000);
  add_roi(b, "bolt", 0, 0, 16, 16, 0);
  GstBuffer* c = painted(info, {}, 2000);
  add_roi(c, "nut", 0, 0, 16, 16, 0);
  ASSERT_EQ(gst_harness_push(h, a), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, b), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, c), GST_FLOW_OK);
  for (GstClockTime pts : {0, 1000, 2000}) {
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), pts);
    EXPECT_EQ(count_tensor_metas(out), pts == 1000 ? 1 : 0);
    if (pts == 1000) EXPECT_EQ(label_of(rois_of(out)[0]), "blue");
    gst_buffer_unref(out);
  }
  EXPECT_EQ(stat_of(h, "frames-skipped-no-regions"), 2u);
  EXPECT_EQ(stat_of(h, "frames-out"), 3u);
  EXPECT_EQ(stat_of(h, "frames-inferred"), 1u);
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
  guint64 frames = 0;
  g_object_get(h->element, "frames", &frames, nullptr);
  EXPECT_EQ(frames, 1u);
  gst_harness_teardown(h);
}

// ---- reuse ---------------------------------------------------------------

TEST(TorchInferRoi, ReclassifyIntervalReusesATrackedObjectsResult) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("reclassify-interval=3", caps);
  // Object 7 (left) is red on frame 0 and green afterwards; the untracked
  // right region is blue throughout.
  const char* want7[] = {"red", "red", "red", "green", "green", "green", "green"};
  const bool inferred7[] = {true, false, false, true, false, false, true};
  const GstClockTime result_pts7[] = {0, 0, 0, 3, 3, 3, 6};
  for (int i = 0; i < 7; ++i) {
    GstBuffer* in =
        painted(info, {{0, 0, 32, 48, i == 0 ? kRed : kGreen}, {32, 0, 32, 48, kBlue}}, i);
    add_roi(in, "part", 0, 0, 32, 48, 0, 7);
    add_roi(in, "part", 32, 0, 32, 48, 1);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    const auto rois = rois_of(out);
    EXPECT_EQ(label_of(rois[0]), want7[i]) << "frame " << i;
    EXPECT_EQ(inferred_of(rois[0]), inferred7[i]) << "frame " << i;
    guint64 rpts = 0;
    gst_structure_get_uint64(gst_torch_roi_get_classification(rois[0], "cls"), "result-pts", &rpts);
    EXPECT_EQ(rpts, result_pts7[i]) << "frame " << i;
    GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 0, nullptr);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(static_cast<bool>(t->inferred), inferred7[i]);
    EXPECT_EQ(t->result_pts, result_pts7[i]);
    EXPECT_EQ(label_of(rois[1]), "blue");
    EXPECT_TRUE(inferred_of(rois[1])) << "untracked regions are inferred every frame";
    gst_buffer_unref(out);
  }
  EXPECT_EQ(stat_of(h, "regions-inferred"), 10u);
  EXPECT_EQ(stat_of(h, "regions-reused"), 4u);
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
  gst_harness_teardown(h);
}

// Issue 24: two cameras funnelled into one roi-list classifier, both with
// torchtrack's id 1. A funnel sends each stream's stream-start again when it
// switches to it; object memory is per stream, so camera B's object 1 is
// inferred on its own pixels instead of carrying camera A's result.
TEST(TorchInferRoi, TwoStreamsThroughOneClassifierKeepTheirOwnObjects) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("reclassify-interval=3 model-instance-id=funnelled", caps);
  const bool inferred[] = {true, false, false, true};
  for (int i = 0; i < 4; ++i) {
    for (const char* cam : {"cam-a", "cam-b"}) {
      const bool a = std::string(cam) == "cam-a";
      ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start(cam)));
      GstBuffer* in = painted(info, {{0, 0, 32, 48, a ? kRed : kBlue}}, i);
      add_roi(in, "part", 0, 0, 32, 48, 0, 1);
      GstBuffer* out = gst_harness_push_and_pull(h, in);
      ASSERT_NE(out, nullptr);
      const auto rois = rois_of(out);
      EXPECT_EQ(label_of(rois[0]), a ? "red" : "blue") << cam << " frame " << i;
      EXPECT_EQ(inferred_of(rois[0]), inferred[i]) << cam << " frame " << i;
      gst_buffer_unref(out);
    }
  }
  EXPECT_EQ(stat_of(h, "regions-inferred"), 4u) << "frames 0 and 3 of each camera";
  EXPECT_EQ(stat_of(h, "regions-reused"), 4u);
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
  gst_harness_teardown(h);
}

TEST(TorchInferRoi, InferenceIntervalStillAppliesPerFrame) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier("inference-interval=2", caps);
  for (int i = 0; i < 3; ++i) {
    GstBuffer* in = painted(info, {{0, 0, 64, 48, kRed}}, i);
    add_roi(in, "part", 0, 0, 32, 48, 0, 7);
    add_roi(in, "part", 32, 0, 32, 48, 1);
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    const auto rois = rois_of(out);
    EXPECT_EQ(label_of(rois[0]), "red") << "frame " << i;
    EXPECT_EQ(inferred_of(rois[0]), i != 1);
    // Untracked regions have nothing to reuse on a frame not inferred.
    EXPECT_EQ(label_of(rois[1]), i == 1 ? "(none)" : "red") << "frame " << i;
    gst_buffer_unref(out);
  }
  EXPECT_EQ(stat_of(h, "frames-skipped"), 1u);
  EXPECT_EQ(stat_of(h, "frames-skipped-interval"), 1u);
  EXPECT_EQ(stat_of(h, "regions-reused"), 1u);
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
  gst_harness_teardown(h);
}

// ---- many regions --------------------------------------------------------

namespace {

// 500 regions of one frame between two frames of one region each: every
// region's own result, the frames in order.
void expect_five_hundred_regions_right(const std::string& props) {
  const std::string caps = rgb_caps(100, 100);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = classifier(props, caps);
  GstBuffer* before = painted(info, {{0, 0, 100, 100, kGreen}}, 0);
  add_roi(before, "part", 0, 0, 10, 10, 0);
  GstBuffer* big = painted(info, {{0, 0, 50, 100, kRed}, {50, 0, 50, 100, kBlue}}, 1);
  for (int i = 0; i < 500; ++i)
    add_roi(big, "part", (i % 2) * 50 + i % 7, i % 40, 10 + i % 13, 10 + i % 11, i);
  GstBuffer* after = painted(info, {{0, 0, 100, 100, kGreen}}, 2);
  add_roi(after, "part", 0, 0, 10, 10, 0);
  ASSERT_EQ(gst_harness_push(h, before), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, big), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, after), GST_FLOW_OK);
  for (int f = 0; f < 3; ++f) {
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), static_cast<GstClockTime>(f));
    const auto rois = rois_of(out);
    if (f != 1) {
      EXPECT_EQ(label_of(rois[0]), "green");
    } else {
      ASSERT_EQ(rois.size(), 500u);
      int wrong = 0;
      for (int i = 0; i < 500; ++i)
        if (label_of(rois[i]) != (i % 2 ? "blue" : "red")) ++wrong;
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(count_tensor_metas(out), 500);
    }
    gst_buffer_unref(out);
  }
  EXPECT_EQ(stat_of(h, "regions-inferred"), 502u);
  gst_harness_teardown(h);
}

}  // namespace

TEST(TorchInferRoi, FiveHundredRegionsOnOneFrameFillManyBatches) {
  expect_five_hundred_regions_right("batch-size=8 batch-timeout=1000");
}

// Two lanes: the big frame's 63 batches run two at a time and finish in any
// order; its regions still get their own results.
TEST(TorchInferRoi, FiveHundredRegionsOverTwoLanesKeepTheirResults) {
  const int lanes = std::min(2, torchinfer::physical_cores(torchinfer::allowed_cpus()));
  expect_five_hundred_regions_right("batch-size=8 batch-timeout=1000 lanes=" +
                                    std::to_string(lanes));
}

// ---- JSON ----------------------------------------------------------------

TEST(TorchInferRoi, MetaconvertWritesEachDetectionsClassification) {
  const std::string caps = rgb_caps(64, 48);
  const GstVideoInfo info = info_of(caps);
  char path[] = "/tmp/torchinfer-roi-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer name=cls inference-region=roi-list model=" + model("channel_classifier.pt") +
       " ! torchmetaconvert location=" + path)
          .c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer* in = painted(info, {{0, 0, 32, 48, kRed}, {32, 0, 32, 48, kBlue}});
  gst_buffer_add_torch_detection(in, "bolt", 0, 0.9, 0, 0, 32, 48, 64, 48);
  gst_buffer_add_torch_detection(in, "nut", 1, 0.8, 100, 100, 120, 120, 64, 48);  // outside
  gst_buffer_unref(gst_harness_push_and_pull(h, in));
  gst_harness_teardown(h);
  std::ifstream f(path);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  std::remove(path);
  const nlohmann::json j = nlohmann::json::parse(line);
  ASSERT_EQ(j["detections"].size(), 2u);
  const nlohmann::json& c = j["detections"][0]["classification"];
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["label"], "red");
  EXPECT_EQ(c[0]["label_id"], 0);
  EXPECT_GT(c[0]["confidence"].get<double>(), 0.99);
  EXPECT_EQ(c[0]["model"], model("channel_classifier.pt"));
  EXPECT_EQ(c[0]["model_instance_id"], "");
  EXPECT_EQ(c[0]["element"], "cls");
  EXPECT_EQ(c[0]["inferred"], true);
  EXPECT_FALSE(j["detections"][1].contains("classification"));
  EXPECT_FALSE(j.contains("model")) << "no whole-frame result on this frame";
}

// ---- overlay ---------------------------------------------------------------

// torchoverlay writes each classification after the box's own label:
// "bolt 0.90: red 1.00" looks exactly like a detection labelled "bolt 0.90: red".
TEST(TorchInferRoi, OverlayDrawsTheClassificationAfterTheLabel) {
  const std::string caps = rgb_caps(320, 240);
  const GstVideoInfo info = info_of(caps);
  auto draw = [&](GstBuffer* in) {
    GstHarness* h = gst_harness_new("torchoverlay");
    gst_harness_set_src_caps_str(h, caps.c_str());
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    gst_harness_teardown(h);
    return out;
  };
  auto bytes = [](GstBuffer* b) {
    GstMapInfo m;
    gst_buffer_map(b, &m, GST_MAP_READ);
    std::string out(reinterpret_cast<const char*>(m.data), m.size);
    gst_buffer_unmap(b, &m);
    gst_buffer_unref(b);
    return out;
  };
  GstBuffer* classified = painted(info, {});
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_torch_detection(classified, "bolt", 0, 0.9, 20, 60, 200, 200, 320, 240);
  gst_video_region_of_interest_meta_add_param(
      roi, gst_structure_new("classification", "label", G_TYPE_STRING, "red", "label_id",
                             G_TYPE_INT, 0, "confidence", G_TYPE_DOUBLE, 1.0, nullptr));
  GstBuffer* same = painted(info, {});
  gst_buffer_add_torch_detection(same, "bolt 0.90: red", 0, 1.0, 20, 60, 200, 200, 320, 240);
  GstBuffer* plain = painted(info, {});
  gst_buffer_add_torch_detection(plain, "bolt", 0, 0.9, 20, 60, 200, 200, 320, 240);
  const std::string a = bytes(draw(classified)), b = bytes(draw(same)), c = bytes(draw(plain));
  EXPECT_TRUE(a == b) << "classification text differs from the expected label";
  EXPECT_FALSE(a == c) << "the classification was not drawn";
}

// ---- settings ------------------------------------------------------------

TEST(TorchInferRoi, CropWithRoiListFailsTheStartNamingTheFix) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "inference-region", "roi-list");
  g_object_set(e, "model", model("channel_classifier.pt").c_str(), "crop", "0,0,8,8", nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("Unset crop"), std::string::npos) << r.error.message;
  gst_object_unref(e);
}

TEST(TorchInferRoi, PropertiesHaveTheirDefaultsAndRefuseOutOfRangeValues) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  gint region = -1, min_size = -1, every = -1;
  gdouble padding = -1;
  gchar* classes = reinterpret_cast<gchar*>(1);
  g_object_get(e, "inference-region", &region, "min-object-size", &min_size, "object-padding",
               &padding, "reclassify-interval", &every, "object-class", &classes, nullptr);
  EXPECT_EQ(region, 0);  // full-frame
  EXPECT_EQ(min_size, 0);
  EXPECT_DOUBLE_EQ(padding, 0.0);
  EXPECT_EQ(every, 1);
  EXPECT_EQ(classes, nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "inference-region", "roi-list");
  g_object_get(e, "inference-region", &region, nullptr);
  EXPECT_EQ(region, 1);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "object-padding", -0.5, "reclassify-interval", 0, "min-object-size", -1,
                 nullptr);
    EXPECT_EQ(w.messages().size(), 3u);
  }
  g_object_get(e, "object-padding", &padding, "reclassify-interval", &every, nullptr);
  EXPECT_DOUBLE_EQ(padding, 0.0);
  EXPECT_EQ(every, 1);
  gst_object_unref(e);
}

}  // namespace
