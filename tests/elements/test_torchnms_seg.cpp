// torchnms decoder=yolov8-seg through torchinfer: the masks on the ROIs
// against models/seg_reference.py (exact on fixed outputs, IoU >= 0.99 on a
// random-weight head), the counters, and hostile heads.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "overlay/draw.h"
#include "overlay/heatmap.h"

using namespace torchinfer::test;
using json = nlohmann::json;

namespace {

std::string caps_of(int w, int h) {
  return "video/x-raw,format=RGB,width=" + std::to_string(w) + ",height=" + std::to_string(h) +
         ",framerate=30/1";
}

GstHarness* chain(const std::string& model_name, const std::string& caps,
                  const std::string& infer_props = "", const std::string& nms_props = "") {
  const std::string line = "torchinfer precision=fp32 model=" + model(model_name) + " " +
                           infer_props + " ! torchnms name=nms " + nms_props;
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  return h;
}

GstBuffer* frame_of(const std::string& caps, const std::vector<std::uint8_t>* pixels = nullptr) {
  const GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  if (pixels)
    gst_buffer_fill(buf, 0, pixels->data(), pixels->size());
  else
    gst_buffer_memset(buf, 0, 128, GST_VIDEO_INFO_SIZE(&info));
  return buf;
}

// What the ROI meta says, read with stock API only (the documented layout).
struct SegDetection {
  int label_id = -1;
  double box[4] = {0, 0, 0, 0};  // frame pixels
  bool has_mask = false;
  guint x = 0, y = 0, width = 0, height = 0;
  guint64 area = 0;
  std::string encoding;
  std::vector<std::uint32_t> rle;
};

std::vector<SegDetection> read_rois(GstBuffer* buf, int fw, int fh) {
  std::vector<SegDetection> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    GstTorchDetection d;
    EXPECT_TRUE(gst_torch_detection_from_roi(roi, &d));
    SegDetection s;
    s.label_id = d.label_id;
    s.box[0] = d.x_min * fw, s.box[1] = d.y_min * fh, s.box[2] = d.x_max * fw;
    s.box[3] = d.y_max * fh;
    if (const GstStructure* k = gst_torch_roi_get_mask(roi)) {
      s.has_mask = gst_structure_get_uint(k, "x", &s.x) && gst_structure_get_uint(k, "y", &s.y) &&
                   gst_structure_get_uint(k, "width", &s.width) &&
                   gst_structure_get_uint(k, "height", &s.height) &&
                   gst_structure_get_uint64(k, "area", &s.area);
      const gchar* enc = gst_structure_get_string(k, "encoding");
      s.encoding = enc ? enc : "";
      const GValue* runs = gst_structure_get_value(k, "rle");
      for (guint i = 0; runs && i < gst_value_array_get_size(runs); ++i)
        s.rle.push_back(g_value_get_uint(gst_value_array_get_value(runs, i)));
      EXPECT_EQ(roi->x, s.x);
      EXPECT_EQ(roi->w, s.width);
    }
    out.push_back(std::move(s));
  }
  return out;
}

json read_json(const std::string& name) {
  std::ifstream f(model(name));
  EXPECT_TRUE(f.good()) << name;
  return json::parse(f);
}

std::vector<std::uint8_t> bits_of(const std::vector<std::uint32_t>& rle) {
  std::vector<std::uint8_t> bits;
  bool set = false;
  for (std::uint32_t r : rle) {
    bits.insert(bits.end(), r, set);
    set = !set;
  }
  return bits;
}

// IoU of two masks on the same grid; 1 when both are empty.
double mask_iou(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  const auto x = bits_of(a), y = bits_of(b);
  EXPECT_EQ(x.size(), y.size());
  std::size_t inter = 0, uni = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    inter += x[i] && y[i];
    uni += x[i] || y[i];
  }
  return uni ? double(inter) / uni : 1.0;
}

void expect_exact(const std::vector<SegDetection>& got, const json& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const json& w = want[i];
    const json& k = w["mask"];
    EXPECT_EQ(got[i].label_id, w["label_id"].get<int>()) << i;
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(got[i].box[c], w["box"][c].get<double>(), 1e-9) << i;
    ASSERT_TRUE(got[i].has_mask) << i;
    EXPECT_EQ(got[i].encoding, "rle-rows");
    EXPECT_EQ(got[i].x, k["x"].get<guint>()) << i;
    EXPECT_EQ(got[i].y, k["y"].get<guint>()) << i;
    EXPECT_EQ(got[i].width, k["width"].get<guint>()) << i;
    EXPECT_EQ(got[i].height, k["height"].get<guint>()) << i;
    EXPECT_EQ(got[i].area, k["area"].get<guint64>()) << i;
    EXPECT_EQ(got[i].rle, k["rle"].get<std::vector<std::uint32_t>>()) << i;
  }
}

GstStructure* nms_stats(GstHarness* h) {
  GstElement* nms = gst_bin_get_by_name(GST_BIN(h->element), "nms");
  GstStructure* s = nullptr;
  g_object_get(nms, "stats", &s, nullptr);
  gst_object_unref(nms);
  return s;
}

guint64 stat(const GstStructure* s, const char* name) {
  guint64 v = 999999;
  EXPECT_TRUE(gst_structure_get_uint64(s, name, &v)) << name;
  return v;
}

std::vector<SegDetection> one_frame(GstHarness* h, const std::string& caps, int w, int hgt) {
  GstBuffer* out = gst_harness_push_and_pull(h, frame_of(caps));
  auto got = read_rois(out, w, hgt);
  gst_buffer_unref(out);
  return got;
}

}  // namespace

TEST(TorchNmsSeg, FixedHeadGivesTheReferenceMasksExactly) {
  const json want = read_json("seg_fixed.expected.json")["stretch_128x128"];
  const std::string caps = caps_of(128, 128);
  GstHarness* h = chain("seg_fixed.pt", caps);
  const auto got = one_frame(h, caps, 128, 128);
  expect_exact(got, want["detections"]);
  // Hand check of the reference: anchor 3's +10 prototype fills its box
  // (model 7..17 x 47..57, twice that in frame pixels), anchor 2's -10
  // leaves it empty.
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].area, 400u);
  EXPECT_EQ(got[3].rle, std::vector<std::uint32_t>({0, 400}));
  EXPECT_EQ(got[2].area, 0u);
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks"), 4u);
  EXPECT_EQ(stat(s, "masks-empty"), 1u);
  EXPECT_EQ(stat(s, "masks-full"), 1u);
  EXPECT_EQ(stat(s, "masks-invalid"), 0u);
  gst_structure_free(s);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, LetterboxedFrameMasksMapBackExactly) {
  const json want = read_json("seg_fixed.expected.json")["letterbox_160x128"];
  const std::string caps = caps_of(160, 128);
  GstHarness* h = chain("seg_fixed.pt", caps, "keep-aspect-ratio=true");
  GstBuffer* out = gst_harness_push_and_pull(h, frame_of(caps));
  // The reference assumed torchinfer's letterbox: check it is that one.
  const GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(tm, nullptr);
  EXPECT_DOUBLE_EQ(tm->transform.scale_x, want["transform"][0].get<double>());
  EXPECT_DOUBLE_EQ(tm->transform.scale_y, want["transform"][1].get<double>());
  EXPECT_DOUBLE_EQ(tm->transform.offset_y, want["transform"][3].get<double>());
  expect_exact(read_rois(out, 160, 128), want["detections"]);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, RandomHeadMasksMatchTheReference) {
  const json want = read_json("seg_random.expected.json")["detections"];
  std::ifstream f(model("seg_random.frame.rgb"), std::ios::binary);
  const std::vector<std::uint8_t> pixels((std::istreambuf_iterator<char>(f)), {});
  ASSERT_EQ(pixels.size(), 64u * 64 * 3);
  const std::string caps = caps_of(64, 64);
  GstHarness* h = chain("seg_random.pt", caps);
  GstBuffer* out = gst_harness_push_and_pull(h, frame_of(caps, &pixels));
  const auto got = read_rois(out, 64, 64);
  gst_buffer_unref(out);
  ASSERT_EQ(got.size(), want.size());
  double min_iou = 1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const json& k = want[i]["mask"];
    EXPECT_EQ(got[i].label_id, want[i]["label_id"].get<int>()) << i;
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(got[i].box[c], want[i]["box"][c].get<double>(), 1e-3);
    ASSERT_EQ(got[i].width, k["width"].get<guint>()) << i;
    ASSERT_EQ(got[i].height, k["height"].get<guint>()) << i;
    const double iou = mask_iou(got[i].rle, k["rle"].get<std::vector<std::uint32_t>>());
    EXPECT_GE(iou, 0.99) << "detection " << i << ": area " << got[i].area << " vs "
                         << k["area"].get<guint64>();
    min_iou = std::min(min_iou, iou);
  }
  // The figure for the notes.
  std::printf("seg_random: %zu detections, lowest mask IoU %.4f\n", got.size(), min_iou);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, MaskThresholdZeroFillsEveryBox) {
  const std::string caps = caps_of(128, 128);
  GstHarness* h = chain("seg_fixed.pt", caps, "", "mask-threshold=0");
  const auto got = one_frame(h, caps, 128, 128);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].area, 48u * 32);  // box 16..64 x 24..56
  EXPECT_EQ(got[2].area, 24u * 16);  // the -10 one too: sigmoid > 0 everywhere
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks-full"), 4u);
  EXPECT_EQ(stat(s, "masks-empty"), 0u);
  gst_structure_free(s);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, OtherDecodersAttachNoMask) {
  const std::string caps = caps_of(128, 128);
  // yolov8 reads the head alone ([1, 38, 8]: 34 "classes"), no masks.
  GstHarness* h = chain("seg_fixed.pt", caps, "", "decoder=yolov8");
  const auto got = one_frame(h, caps, 128, 128);
  ASSERT_FALSE(got.empty());
  for (const auto& d : got) EXPECT_FALSE(d.has_mask);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, EightyFourHundredCandidatesOfAHundredClasses) {
  const std::string caps = caps_of(640, 640);
  GstHarness* h = chain("seg_many.pt", caps);
  const auto got = one_frame(h, caps, 640, 640);
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(got.front().label_id, 99);  // anchor 8399
  for (const auto& d : got) {
    EXPECT_EQ(d.area, 16u);
    EXPECT_EQ(d.rle, std::vector<std::uint32_t>({0, 16}));
  }
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks-full"), 100u);
  gst_structure_free(s);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, NanCoefficientsGiveNoDetectionsAndNoCrash) {
  // torchinfer marks the result invalid (NaN in an output): torchnms
  // attaches nothing and decodes nothing.
  const std::string caps = caps_of(128, 128);
  GstHarness* h = chain("seg_nan.pt", caps);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(one_frame(h, caps, 128, 128).empty());
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks"), 0u);
  EXPECT_EQ(stat(s, "frames"), 0u);
  gst_structure_free(s);
  gst_harness_teardown(h);
}

namespace {

// The first error after frames flow: message and debug text.
BusError first_error(const std::string& model_name, const std::string& nms_props = "") {
  const std::string caps = caps_of(128, 128);
  GstHarness* h = chain(model_name, caps, "", nms_props);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  int pushes = 0;
  while (gst_harness_push(h, frame_of(caps)) == GST_FLOW_OK && ++pushes < 200) g_usleep(5000);
  BusError e;
  int errors = 0;
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* err = nullptr;
    gchar* debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    if (!errors++) {
      e.set = true;
      e.domain = err->domain;
      e.code = err->code;
      e.message = err->message;
      e.debug = debug ? debug : "";
    }
    g_error_free(err);
    g_free(debug);
    gst_message_unref(msg);
  }
  EXPECT_EQ(errors, 1) << "one error, not one per frame";
  gst_element_set_bus(h->element, nullptr);
  gst_harness_teardown(h);
  gst_object_unref(bus);
  return e;
}

}  // namespace

TEST(TorchNmsSegErrors, FlatPrototypesAreOneClearError) {
  const BusError e = first_error("seg_flat_protos.pt");
  ASSERT_TRUE(e.set);
  EXPECT_EQ(e.domain, GST_STREAM_ERROR);
  EXPECT_NE(e.message.find("decoder yolov8-seg expects"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("[1, 32, 256] float32"), std::string::npos) << e.message;
  EXPECT_NE(e.debug.find("seg_flat_protos.pt"), std::string::npos) << e.debug;
  EXPECT_NE(e.debug.find("decoder="), std::string::npos) << e.debug;
}

TEST(TorchNmsSegErrors, HeadWithoutClassScoresIsOneClearError) {
  const BusError e = first_error("seg_no_classes.pt");
  ASSERT_TRUE(e.set);
  EXPECT_NE(e.message.find("36 channels leave no class score"), std::string::npos) << e.message;
  EXPECT_NE(e.debug.find("seg_no_classes.pt"), std::string::npos) << e.debug;
}

TEST(TorchNmsSegErrors, LabelsOfAnotherModelAreOneClearError) {
  const std::string labels = testing::TempDir() + "seg_three.labels";
  std::ofstream(labels) << "a\nb\nc\n";
  const BusError e = first_error("seg_fixed.pt", "labels=" + labels);
  ASSERT_TRUE(e.set);
  EXPECT_NE(e.message.find("2 class scores"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("3 labels are given"), std::string::npos) << e.message;
}

TEST(TorchNmsSegErrors, SegDecoderOnAOneOutputModelIsOneClearError) {
  const BusError e = first_error("yolo_candidates.pt", "decoder=yolov8-seg");
  ASSERT_TRUE(e.set);
  EXPECT_NE(e.message.find("exactly two outputs"), std::string::npos) << e.message;
}

TEST(TorchNmsSeg, JsonLineCarriesEachMaskWithItsCalibratedArea) {
  const json want = read_json("seg_fixed.expected.json")["stretch_128x128"]["detections"];
  const std::string out = testing::TempDir() + "seg_masks.jsonl";
  const std::string caps = caps_of(128, 128);
  const std::string line = "torchinfer precision=fp32 model=" + model("seg_fixed.pt") +
                           " ! torchnms ! torchmetaconvert mm-per-pixel=0.25 location=" + out;
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  gst_buffer_unref(gst_harness_push_and_pull(h, frame_of(caps)));
  gst_harness_teardown(h);
  std::ifstream f(out);
  std::string text;
  ASSERT_TRUE(std::getline(f, text));
  const json j = json::parse(text);
  ASSERT_EQ(j["detections"].size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const json& m = j["detections"][i]["mask"];
    const json& k = want[i]["mask"];
    EXPECT_EQ(m["area"], k["area"]) << i;
    EXPECT_DOUBLE_EQ(m["area_mm2"].get<double>(), k["area"].get<double>() * 0.0625) << i;
    EXPECT_EQ(m["rle"], k["rle"]) << i;
    for (const char* key : {"x", "y", "width", "height"}) EXPECT_EQ(m[key], k[key]) << key;
  }
  // p0: +4 on cells 3..6 x 2..7 crosses 0 exactly on the box (48 x 32 pixels);
  // bilinear sampling rounds each corner off by 6 pixels.
  EXPECT_EQ(j["detections"][0]["mask"]["area"], 48 * 32 - 4 * 6);
}

// Masks are not merged across tile borders: tiles give boxes only, and
// say so once on the bus rather than leaving the masks out silently.
TEST(TorchNmsSeg, TilesGiveBoxesOnlyAndWarnOnce) {
  const std::string caps = caps_of(128, 128);
  GstHarness* h = gst_harness_new_parse(("torchinfer precision=fp32 inference-region=tiles model=" +
                                         model("seg_fixed.pt") + " ! torchnms")
                                            .c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstElement* nms = gst_harness_find_element(h, "torchnms");
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(nms, bus);
  int detections = 0;
  for (int i = 0; i < 2; ++i) {
    GstBuffer* out = gst_harness_push_and_pull(h, frame_of(caps));
    ASSERT_NE(out, nullptr);
    gst_torch::foreach_detection(
        out, [&](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection&) {
          ++detections;
          EXPECT_EQ(gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_MASK_STRUCTURE_NAME),
                    nullptr);
        });
    gst_buffer_unref(out);
  }
  EXPECT_GT(detections, 0);
  int warnings = 0;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gst_message_parse_warning(m, &err, nullptr);
    EXPECT_NE(std::string(err->message).find("Masks are not decoded for inference-region=tiles"),
              std::string::npos)
        << err->message;
    ++warnings;
    g_error_free(err);
    gst_message_unref(m);
  }
  EXPECT_EQ(warnings, 1);
  gst_element_set_bus(nms, nullptr);
  gst_object_unref(bus);
  gst_object_unref(nms);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, OverlayFillsMasksTranslucently) {
  const std::string caps = caps_of(128, 128);
  const std::string line =
      "torchinfer precision=fp32 model=" + model("seg_fixed.pt") + " ! torchnms ! torchoverlay";
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer* out = gst_harness_push_and_pull(h, frame_of(caps));
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(out, &map, GST_MAP_READ));
  auto px = [&](int x, int y, int c) { return map.data[(y * 128 + x) * 3 + c]; };
  // (40, 40): inside detection 0's mask (box 16..64 x 24..56), 0.4 of its
  // class colour over the grey frame; (4, 4) lies in no box.
  const torchinfer::Rgb c = torchinfer::class_colour(0);
  EXPECT_EQ(px(40, 40, 0), torchinfer::blend_sample(128, c.r, 0.4));
  EXPECT_EQ(px(40, 40, 1), torchinfer::blend_sample(128, c.g, 0.4));
  EXPECT_EQ(px(40, 40, 2), torchinfer::blend_sample(128, c.b, 0.4));
  EXPECT_EQ(px(4, 4, 0), 128);
  // (100, 24): in detection 2's box (92..116 x 16..32), whose mask is empty.
  EXPECT_EQ(px(100, 24, 0), 128);
  gst_buffer_unmap(out, &map);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchNmsSeg, MasksPastTheRunBudgetAreDroppedCountedAndWarnedOnce) {
  const std::string caps = caps_of(640, 640);
  GstHarness* h = chain("seg_checker.pt", caps);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  std::vector<SegDetection> got;
  for (int i = 0; i < 2; ++i) got = one_frame(h, caps, 640, 640);
  ASSERT_EQ(got.size(), 100u);
  // Every mask is alike (the whole frame on the checkerboard): the budget
  // holds floor(4 Mi / its runs) of them, the best detections' first.
  ASSERT_TRUE(got[0].has_mask);
  const std::size_t runs = got[0].rle.size();
  ASSERT_GT(runs, 1000u);
  const std::size_t kept = (std::size_t{1} << 22) / runs;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].has_mask, i < kept) << i;
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks"), 2 * kept);
  EXPECT_EQ(stat(s, "masks-dropped"), 2 * (100 - kept));
  gst_structure_free(s);
  int warnings = 0;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gst_message_parse_warning(m, &err, nullptr);
    EXPECT_NE(std::string(err->message).find("Masks dropped"), std::string::npos) << err->message;
    g_error_free(err);
    gst_message_unref(m);
    ++warnings;
  }
  EXPECT_EQ(warnings, 1);
  gst_element_set_bus(h->element, nullptr);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

// Two full-frame models on one stream (the QA app's detector and
// --segmenter): torchnms model-instance-id decodes only that torchinfer's
// result; unset, the first one on the buffer, as before.
TEST(TorchNmsSeg, ModelInstanceIdPicksWhichFullFrameResultIsDecoded) {
  const std::string caps = caps_of(128, 128);
  auto two_models = [&](const std::string& nms_props) {
    const std::string line =
        "torchinfer precision=fp32 model=" + model("yolo_candidates.pt") +
        " model-instance-id=det ! torchinfer precision=fp32 model=" + model("seg_fixed.pt") +
        " model-instance-id=seg ! torchnms name=nms " + nms_props;
    GstHarness* h = gst_harness_new_parse(line.c_str());
    gst_harness_set_src_caps_str(h, caps.c_str());
    return h;
  };
  GstHarness* seg = two_models("model-instance-id=seg");
  GstBuffer* out = gst_harness_push_and_pull(seg, frame_of(caps));
  expect_exact(read_rois(out, 128, 128),
               read_json("seg_fixed.expected.json")["stretch_128x128"]["detections"]);
  // Each detection names the instance it came from.
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             out, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    const GstStructure* s = gst_video_region_of_interest_meta_get_param(
        reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), GST_TORCH_DETECTION_STRUCTURE_NAME);
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(gst_structure_get_string(s, "model-instance-id"), "seg");
  }
  gst_buffer_unref(out);
  gst_harness_teardown(seg);
  // Unset: the detector's result, decoded as its sidecar says (yolov5: no masks).
  GstHarness* first = two_models("");
  const auto got = one_frame(first, caps, 128, 128);
  ASSERT_FALSE(got.empty());
  for (const auto& d : got) EXPECT_FALSE(d.has_mask);
  gst_harness_teardown(first);
  GstHarness* plain = chain("seg_fixed.pt", caps);  // without the property: no such field
  GstBuffer* b = gst_harness_push_and_pull(plain, frame_of(caps));
  GstVideoRegionOfInterestMeta* roi = gst_buffer_get_video_region_of_interest_meta_id(b, 0);
  ASSERT_NE(roi, nullptr);
  EXPECT_FALSE(gst_structure_has_field(
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME),
      "model-instance-id"));
  gst_buffer_unref(b);
  gst_harness_teardown(plain);
  // An id no torchinfer upstream has: frames pass without detections.
  GstHarness* none = two_models("model-instance-id=nobody");
  EXPECT_TRUE(one_frame(none, caps, 128, 128).empty());
  gst_harness_teardown(none);
}

namespace {

// torchnms' start log lines that name the mask threshold.
std::vector<std::string>* g_mask_log = nullptr;

void collect_mask_log(GstDebugCategory* cat, GstDebugLevel, const gchar*, const gchar*, gint,
                      GObject*, GstDebugMessage* message, gpointer) {
  const gchar* text = gst_debug_message_get(message);
  if (g_mask_log && std::string(gst_debug_category_get_name(cat)) == "torchnms" && text &&
      std::string(text).find("mask-threshold") != std::string::npos)
    g_mask_log->push_back(text);
}

// seg_fixed's sidecar with "mask_threshold": 0, for torchnms model-config.
std::string sidecar_with_zero_threshold() {
  json j = read_json("seg_fixed.json");
  j["mask_threshold"] = 0.0;
  const std::string path = testing::TempDir() + "seg_fixed_mask0.json";
  std::ofstream(path) << j.dump();
  return path;
}

}  // namespace

// The sidecar's mask_threshold applies unless mask-threshold is set; the
// start log says which: 0 from the sidecar fills every box (as the property
// 0 does above), the property 0.5 over it gives the reference masks.
TEST(TorchNmsSeg, SidecarMaskThresholdAppliesUnlessThePropertyIsSet) {
  std::vector<std::string> log;
  g_mask_log = &log;
  gst_debug_set_threshold_for_name("torchnms", GST_LEVEL_INFO);
  gst_debug_add_log_function(collect_mask_log, nullptr, nullptr);
  const std::string caps = caps_of(128, 128);
  const std::string config = "model-config=" + sidecar_with_zero_threshold();
  GstHarness* h = chain("seg_fixed.pt", caps, "", config);
  const auto from_sidecar = one_frame(h, caps, 128, 128);
  GstStructure* s = nms_stats(h);
  EXPECT_EQ(stat(s, "masks-full"), 4u);
  gst_structure_free(s);
  gst_harness_teardown(h);
  ASSERT_EQ(from_sidecar.size(), 4u);
  EXPECT_EQ(from_sidecar[0].area, 48u * 32);
  EXPECT_EQ(from_sidecar[2].area, 24u * 16);

  GstHarness* p = chain("seg_fixed.pt", caps, "", config + " mask-threshold=0.5");
  expect_exact(one_frame(p, caps, 128, 128),
               read_json("seg_fixed.expected.json")["stretch_128x128"]["detections"]);
  gst_harness_teardown(p);
  gst_debug_remove_log_function(collect_mask_log);
  gst_debug_unset_threshold_for_name("torchnms");
  g_mask_log = nullptr;
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("mask-threshold 0 (sidecar)"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("mask-threshold 0.5 (property)"), std::string::npos) << log[1];
}
