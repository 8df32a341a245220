// A model's preprocessing contract in its sidecar (object_padding, resize,
// pad_value, object_classes, tile_width/tile_height/tile_overlap): torchinfer applies it unless the
// matching property is set, and says at start where each value came from (the "torchinfer-contract"
// message). roi_identity.pt returns exactly what it saw, so the transform and the pixels show what
// was fed.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;
using nlohmann::json;

namespace {

// `base`'s sidecar (the test model's) with `extra` keys, written to a file
// of its own; its path.
std::string sidecar_with(const std::string& base, const std::string& name, const json& extra) {
  std::ifstream in(model(base + ".json"));
  json j = json::parse(in);
  for (const auto& [k, v] : extra.items()) j[k] = v;
  const std::string path = testing::TempDir() + "contract_" + name + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

struct Element {
  GstHarness* h = nullptr;
  GstBus* bus = nullptr;
  json contract;  // the "torchinfer-contract" message's fields

  ~Element() {
    if (h) gst_element_set_bus(h->element, nullptr);
    if (h) gst_harness_teardown(h);
    if (bus) gst_object_unref(bus);
  }
};

// torchinfer with `props`, started with a bus of its own, and the contract
// it announced.
void start(Element& e, const std::string& props, const std::string& caps) {
  GError* err = nullptr;
  GstElement* el = gst_parse_launch(("torchinfer " + props).c_str(), &err);
  ASSERT_NE(el, nullptr) << (err ? err->message : "");
  e.bus = gst_bus_new();
  gst_element_set_bus(el, e.bus);
  e.h = gst_harness_new_with_element(el, "sink", "src");
  gst_object_unref(el);
  gst_harness_set_live(e.h, FALSE);
  gst_harness_set_src_caps_str(e.h, caps.c_str());
  GstMessage* m = wait_element_message(e.bus, "torchinfer-contract");
  ASSERT_NE(m, nullptr) << "no torchinfer-contract message";
  const GstStructure* s = gst_message_get_structure(m);
  double padding = -1, overlap = -1;
  int pad = -1, tile_w = -1, tile_h = -1;
  EXPECT_TRUE(gst_structure_get_double(s, "object-padding", &padding));
  EXPECT_TRUE(gst_structure_get_int(s, "pad-value", &pad));
  EXPECT_TRUE(gst_structure_get_int(s, "tile-width", &tile_w));
  EXPECT_TRUE(gst_structure_get_int(s, "tile-height", &tile_h));
  EXPECT_TRUE(gst_structure_get_double(s, "tile-overlap", &overlap));
  e.contract = {{"object-padding", padding},
                {"object-padding-from", gst_structure_get_string(s, "object-padding-from")},
                {"resize", gst_structure_get_string(s, "resize")},
                {"resize-from", gst_structure_get_string(s, "resize-from")},
                {"pad-value", pad},
                {"pad-value-from", gst_structure_get_string(s, "pad-value-from")},
                {"object-class", gst_structure_get_string(s, "object-class")},
                {"object-class-from", gst_structure_get_string(s, "object-class-from")},
                {"tile-width", tile_w},
                {"tile-width-from", gst_structure_get_string(s, "tile-width-from")},
                {"tile-height", tile_h},
                {"tile-height-from", gst_structure_get_string(s, "tile-height-from")},
                {"tile-overlap", overlap},
                {"tile-overlap-from", gst_structure_get_string(s, "tile-overlap-from")}};
  gst_message_unref(m);
}

std::string rgb_caps(int w, int h) {
  return "video/x-raw,format=RGB,width=" + std::to_string(w) + ",height=" + std::to_string(h) +
         ",framerate=30/1";
}

GstBuffer* white(const std::string& caps) {
  const GstVideoInfo info = info_of(caps);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, 255, GST_VIDEO_INFO_SIZE(&info));
  return buf;
}

const char* kRoiIdentity = "roi_identity";  // 16x12 input, raw output = input

std::string roi_identity(const std::string& config, const std::string& extra) {
  return "model=" + model("roi_identity.pt") + " model-config=" + config + " " + extra;
}

}  // namespace

// The case: the sidecar's padding is applied without the property.
// ROI 20,10 8x6 padded by 0.5 per side is 16,7 16x12: 1:1 into the 16x12
// input.
TEST(TorchInferContract, SidecarPaddingIsAppliedToEachRegionAndAnnounced) {
  const std::string caps = rgb_caps(64, 48);
  Element e;
  start(e,
        roi_identity(sidecar_with(kRoiIdentity, "pad05", {{"object_padding", 0.5}}),
                     "inference-region=roi-list"),
        caps);
  EXPECT_EQ(e.contract["object-padding"], 0.5) << e.contract;
  EXPECT_EQ(e.contract["object-padding-from"], "sidecar") << e.contract;
  EXPECT_EQ(e.contract["resize-from"], "default") << e.contract;
  GstBuffer* in = white(caps);
  gst_buffer_add_video_region_of_interest_meta(in, "a", 20, 10, 8, 6)->id = 1;
  GstBuffer* out = gst_harness_push_and_pull(e.h, in);
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 1, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->transform.scale_x, 1.0);
  EXPECT_DOUBLE_EQ(t->transform.offset_x, -16.0);
  EXPECT_DOUBLE_EQ(t->transform.scale_y, 1.0);
  EXPECT_DOUBLE_EQ(t->transform.offset_y, -7.0);
  gst_buffer_unref(out);
}

// object-padding set, even to its default 0, wins: the bare 8x6 box is
// stretched 2:1 into the input.
TEST(TorchInferContract, ObjectPaddingPropertyOverridesTheSidecar) {
  const std::string caps = rgb_caps(64, 48);
  Element e;
  start(e,
        roi_identity(sidecar_with(kRoiIdentity, "pad05", {{"object_padding", 0.5}}),
                     "inference-region=roi-list object-padding=0"),
        caps);
  EXPECT_EQ(e.contract["object-padding"], 0.0) << e.contract;
  EXPECT_EQ(e.contract["object-padding-from"], "property") << e.contract;
  GstBuffer* in = white(caps);
  gst_buffer_add_video_region_of_interest_meta(in, "a", 20, 10, 8, 6)->id = 1;
  GstBuffer* out = gst_harness_push_and_pull(e.h, in);
  GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta_for_roi(out, 1, nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->transform.scale_x, 2.0);
  EXPECT_DOUBLE_EQ(t->transform.offset_x, -40.0);
  EXPECT_DOUBLE_EQ(t->transform.scale_y, 2.0);
  EXPECT_DOUBLE_EQ(t->transform.offset_y, -20.0);
  gst_buffer_unref(out);
  double padding = -1;
  g_object_get(e.h->element, "object-padding", &padding, nullptr);
  EXPECT_DOUBLE_EQ(padding, 0.0);
}

// The sidecar's object_classes pick the regions; object-class="" infers
// every region whatever the sidecar says; object-class=b only b.
TEST(TorchInferContract, SidecarObjectClassesPickTheRegionsUnlessTheProperty) {
  const std::string caps = rgb_caps(64, 48);
  const std::string config =
      sidecar_with(kRoiIdentity, "classes", {{"object_classes", {"bolt", "washer"}}});
  struct Case {
    std::string extra, classes, from;
    std::vector<int> inferred;
  } cases[] = {{"", "bolt,washer", "sidecar", {1, 3}},
               {"object-class=\"\"", "", "property", {1, 2, 3}},
               {"object-class=nut", "nut", "property", {2}}};
  for (const Case& c : cases) {
    Element e;
    start(e, roi_identity(config, "inference-region=roi-list " + c.extra), caps);
    EXPECT_EQ(e.contract["object-class"], c.classes) << c.extra;
    EXPECT_EQ(e.contract["object-class-from"], c.from) << c.extra;
    GstBuffer* in = white(caps);
    gst_buffer_add_video_region_of_interest_meta(in, "bolt", 0, 0, 8, 8)->id = 1;
    gst_buffer_add_video_region_of_interest_meta(in, "nut", 8, 0, 8, 8)->id = 2;
    gst_buffer_add_video_region_of_interest_meta(in, "washer", 16, 0, 8, 8)->id = 3;
    GstBuffer* out = gst_harness_push_and_pull(e.h, in);
    std::vector<int> inferred;
    for (int id = 1; id <= 3; ++id)
      if (gst_buffer_get_torch_tensor_meta_for_roi(out, id, nullptr)) inferred.push_back(id);
    EXPECT_EQ(inferred, c.inferred) << c.extra;
    gst_buffer_unref(out);
  }
}

// A sidecar class the detector upstream lacks (yolo_candidates.pt: bolt,
// nut, washer) never matches: the warning names the sidecar to fix, not a
// property the user never set. Once per run.
TEST(TorchInferContract, SidecarClassTheDetectorLacksIsAWarningNamingTheSidecar) {
  const std::string caps = rgb_caps(64, 48);
  const std::string config =
      sidecar_with(kRoiIdentity, "typo", {{"object_classes", {"bolt", "washr"}}});
  Element e;
  start(e, roi_identity(config, "inference-region=roi-list"), caps);
  for (int i = 0; i < 2; ++i) {
    GstBuffer* in = white(caps);
    GST_BUFFER_PTS(in) = i * GST_SECOND / 30;
    GstTorchTensorMeta* tm = gst_buffer_add_torch_tensor_meta(in, 0, nullptr);
    tm->model = g_strdup(model("yolo_candidates.pt").c_str());
    gst_buffer_add_video_region_of_interest_meta(in, "bolt", 0, 0, 8, 8)->id = 1;
    gst_buffer_unref(gst_harness_push_and_pull(e.h, in));
  }
  std::vector<std::string> warnings;
  while (GstMessage* msg = gst_bus_pop_filtered(e.bus, GST_MESSAGE_WARNING)) {
    GError* err = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_warning(msg, &err, &dbg);
    warnings.push_back(std::string(err->message) + " / " + (dbg ? dbg : ""));
    g_error_free(err);
    g_free(dbg);
    gst_message_unref(msg);
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("object_classes 'washr' of the sidecar '" + config +
                                  "' is not a label of '" + model("yolo_candidates.pt") +
                                  "', which found the regions: no region will match it. / ",
                              0),
            0u)
      << warnings[0];
  EXPECT_NE(warnings[0].find("its labels: bolt, nut, washer; fix the sidecar's object_classes or "
                             "set object-class"),
            std::string::npos)
      << warnings[0];
}

// Full frame 32x12 into 16x12: the sidecar's letterbox (pad 0: the top
// row the model sees is 0, not 114/255), its center_crop (columns 8..23),
// and keep-aspect-ratio=false stretching over either.
TEST(TorchInferContract, SidecarResizeModeIsAppliedUnlessKeepAspectRatioIsSet) {
  const std::string caps = rgb_caps(32, 12);
  struct Case {
    json keys;
    std::string extra, resize, from;
    double scale_x, scale_y, offset_x, offset_y;
    float first_value;  // top-left value the model saw
  } cases[] = {
      {{{"resize", "letterbox"}, {"pad_value", 0}},
       "",
       "letterbox",
       "sidecar",
       0.5,
       0.5,
       0,
       3,
       0.f},
      {{{"resize", "letterbox"}}, "", "letterbox", "sidecar", 0.5, 0.5, 0, 3, 114.f / 255},
      {{{"resize", "center_crop"}}, "", "center_crop", "sidecar", 1, 1, -8, 0, 1.f},
      {{{"resize", "center_crop"}},
       "keep-aspect-ratio=false",
       "stretch",
       "property",
       0.5,
       1,
       0,
       0,
       1.f},
      {{{"resize", "letterbox"}, {"pad_value", 0}},
       "keep-aspect-ratio=false",
       "stretch",
       "property",
       0.5,
       1,
       0,
       0,
       1.f},
      {json::object(), "keep-aspect-ratio=true pad-value=51", "letterbox", "property", 0.5, 0.5, 0,
       3, 51.f / 255},
  };
  int n = 0;
  for (const Case& c : cases) {
    Element e;
    start(e,
          roi_identity(sidecar_with(kRoiIdentity, "resize" + std::to_string(n++), c.keys), c.extra),
          caps);
    EXPECT_EQ(e.contract["resize"], c.resize) << c.keys << c.extra;
    EXPECT_EQ(e.contract["resize-from"], c.from) << c.keys << c.extra;
    GstBuffer* out = gst_harness_push_and_pull(e.h, white(caps));
    GstTorchTensorMeta* t = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(t, nullptr);
    EXPECT_DOUBLE_EQ(t->transform.scale_x, c.scale_x) << c.keys << c.extra;
    EXPECT_DOUBLE_EQ(t->transform.scale_y, c.scale_y) << c.keys << c.extra;
    EXPECT_DOUBLE_EQ(t->transform.offset_x, c.offset_x) << c.keys << c.extra;
    EXPECT_DOUBLE_EQ(t->transform.offset_y, c.offset_y) << c.keys << c.extra;
    ASSERT_EQ(t->n_tensors, 1u);
    ASSERT_EQ(t->tensors[0].dtype, GST_TORCH_DTYPE_FLOAT32);
    EXPECT_FLOAT_EQ(static_cast<const float*>(t->tensors[0].data)[0], c.first_value)
        << c.keys << c.extra;
    gst_buffer_unref(out);
  }
}

// A bad contract key fails the start with the file, the key and what it
// takes named.
TEST(TorchInferContract, BadSidecarKeyFailsTheStartNamingFileAndKey) {
  struct Case {
    json keys;
    std::string field, why;
  } cases[] = {{{{"object_padding", 2}}, "object_padding", "between 0 and 1"},
               {{{"resize", "fit"}}, "resize", "stretch, letterbox, center_crop"},
               {{{"object_classes", json::array()}}, "object_classes", "1 to 1000"},
               {{{"tile_width", -640}}, "tile_width", "between 0 and 65535"},
               {{{"tile_height", "480"}}, "tile_height", "between 0 and 65535"},
               {{{"tile_overlap", 1.0}}, "tile_overlap", "between 0 and 0.9"}};
  for (const Case& c : cases) {
    const std::string config = sidecar_with(kRoiIdentity, "bad_" + c.field, c.keys);
    GstElement* el = gst_element_factory_make("torchinfer", nullptr);
    g_object_set(el, "model", model("roi_identity.pt").c_str(), "model-config", config.c_str(),
                 nullptr);
    const StartResult r = try_start(el);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << c.field;
    const std::string text = r.error.message + " / " + r.error.debug;
    EXPECT_NE(text.find(config + ": field '" + c.field + "': expected "), std::string::npos)
        << text;
    EXPECT_NE(text.find(c.why), std::string::npos) << text;
    gst_object_unref(el);
  }
}

// (tile_index, tile_count) of each tensor meta, in the buffer's order; the
// first one's x scale in *scale_x.
static std::vector<std::pair<int, int>> tiles_of(GstBuffer* buf, double* scale_x) {
  std::vector<std::pair<int, int>> out;
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    const auto* t = reinterpret_cast<GstTorchTensorMeta*>(m);
    if (out.empty()) *scale_x = t->transform.scale_x;
    out.push_back({t->tile_index, static_cast<int>(t->tile_count)});
  }
  return out;
}

// The sidecar's tile_width/tile_height/tile_overlap cut the frame unless
// the matching property is set (even to its default). bright_box.pt has a
// 64x64 input; the frame is 160x64. Sidecar 200x100 tiles: one tile (cut to
// the frame), x scale 64/160. Sidecar overlap 0.9 at 64x64: step 64 - 58 = 6,
// ceil(96 / 6) + 1 = 17 tiles; tile-overlap=0.25: step 48, 3 tiles;
// tile-overlap=0.2 (the default, set): step 51, 3 tiles.
TEST(TorchInferContract, SidecarTileSettingsCutTheFrameUnlessThePropertyIsSet) {
  const std::string caps = rgb_caps(160, 64);
  const std::string big =
      sidecar_with("bright_box", "tiles_big", {{"tile_width", 200}, {"tile_height", 100}});
  const std::string dense = sidecar_with("bright_box", "tiles_dense", {{"tile_overlap", 0.9}});
  struct Case {
    std::string config, extra;
    int tiles;
    json want;
  } cases[] = {
      {big,
       "",
       1,
       {{"tile-width", 200},
        {"tile-width-from", "sidecar"},
        {"tile-height", 100},
        {"tile-height-from", "sidecar"},
        {"tile-overlap", 0.2},
        {"tile-overlap-from", "default"}}},
      {big,
       "tile-width=0 tile-height=64",
       3,
       {{"tile-width", 0},
        {"tile-width-from", "property"},
        {"tile-height", 64},
        {"tile-height-from", "property"}}},
      {dense,
       "",
       17,
       {{"tile-width", 0},
        {"tile-width-from", "default"},
        {"tile-overlap", 0.9},
        {"tile-overlap-from", "sidecar"}}},
      {dense, "tile-overlap=0.25", 3, {{"tile-overlap", 0.25}, {"tile-overlap-from", "property"}}},
      {dense, "tile-overlap=0.2", 3, {{"tile-overlap", 0.2}, {"tile-overlap-from", "property"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config + " " + c.extra);
    Element e;
    start(e,
          "model=" + model("bright_box.pt") + " model-config=" + c.config +
              " inference-region=tiles batch-size=17 " + c.extra,
          caps);
    for (const auto& [k, v] : c.want.items()) EXPECT_EQ(e.contract[k], v) << k << e.contract;
    GstBuffer* out = gst_harness_push_and_pull(e.h, white(caps));
    ASSERT_NE(out, nullptr);
    double scale_x = 0;
    const auto tiles = tiles_of(out, &scale_x);
    gst_buffer_unref(out);
    ASSERT_EQ(tiles.size(), static_cast<std::size_t>(c.tiles));
    for (int i = 0; i < c.tiles; ++i) EXPECT_EQ(tiles[i], std::make_pair(i, c.tiles));
    EXPECT_DOUBLE_EQ(scale_x, c.tiles == 1 ? 64.0 / 160.0 : 1.0);
    // The property reads what was set, else its default (not the sidecar's).
    int height = -1;
    g_object_get(e.h->element, "tile-height", &height, nullptr);
    EXPECT_EQ(height, c.extra.find("tile-height=64") == std::string::npos ? 0 : 64);
  }
}
