// The preprocessing contract in a sidecar (object_padding, resize,
// pad_value, object_classes, tile_width/tile_height/tile_overlap): parsed and checked with errors
// naming the file and the key, resolved against the element's properties with each value's source,
// and center_crop's cut in the preprocessing.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "common/aligned_buffer.h"
#include "common/error.h"
#include "common/model_config.h"
#include "common/model_contract.h"
#include "frames.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

// Asserts parsing fails with kConfigInvalid, naming the file, the field and `why`.
void expect_refused(const std::string& json, const std::string& field, const std::string& why) {
  try {
    parse_model_config_text(json, "dir/m.json");
    ADD_FAILURE() << "accepted: " << json;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_EQ(what.rfind("dir/m.json: field '" + field + "': ", 0), 0u) << what;
    EXPECT_NE(what.find(why), std::string::npos) << what;
  }
}

}  // namespace

TEST(ModelContract, SidecarKeysAreRead) {
  const ModelConfig c = parse_model_config_text(
      R"({"object_padding": 0.1, "resize": "letterbox", "pad_value": 0,
          "object_classes": ["bracket", "washer"]})",
      "m.json");
  EXPECT_EQ(c.contract.object_padding, 0.1);
  EXPECT_EQ(c.contract.resize, ResizeMode::kLetterbox);
  EXPECT_EQ(c.contract.pad_value, 0);
  EXPECT_EQ(c.contract.object_classes, (std::vector<std::string>{"bracket", "washer"}));
  const ModelConfig t = parse_model_config_text(
      R"({"tile_width": 640, "tile_height": 480, "tile_overlap": 0.25})", "m.json");
  EXPECT_EQ(t.contract.tile_width, 640);
  EXPECT_EQ(t.contract.tile_height, 480);
  EXPECT_EQ(t.contract.tile_overlap, 0.25);
  // The ends of the properties' ranges (0 = the model's input size).
  const ModelConfig e = parse_model_config_text(
      R"({"tile_width": 0, "tile_height": 65535, "tile_overlap": 0.9})", "m.json");
  EXPECT_EQ(e.contract.tile_width, 0);
  EXPECT_EQ(e.contract.tile_height, 65535);
  EXPECT_EQ(e.contract.tile_overlap, 0.9);
  for (const auto& [text, mode] :
       {std::pair{"stretch", ResizeMode::kStretch}, {"center_crop", ResizeMode::kCenterCrop}})
    EXPECT_EQ(parse_model_config_text(std::string(R"({"resize": ")") + text + "\"}", "m.json")
                  .contract.resize,
              mode);
}

TEST(ModelContract, AbsentKeysLeaveTheContractUnset) {
  const ModelConfig c = parse_model_config_text(R"({"input_width": 8})", "m.json");
  EXPECT_FALSE(c.contract.object_padding);
  EXPECT_FALSE(c.contract.resize);
  EXPECT_FALSE(c.contract.pad_value);
  EXPECT_FALSE(c.contract.object_classes);
  EXPECT_FALSE(c.contract.tile_width);
  EXPECT_FALSE(c.contract.tile_height);
  EXPECT_FALSE(c.contract.tile_overlap);
}

TEST(ModelContract, BadValuesAreRefusedNamingTheFileAndTheKey) {
  for (const char* v : {"-0.1", "1.5", "\"0.1\"", "null", "[0.1]", "true"})
    expect_refused(std::string(R"({"object_padding": )") + v + "}", "object_padding",
                   "between 0 and 1");
  for (const char* v : {"\"fit\"", "\"Letterbox\"", "1", "true"})
    expect_refused(std::string(R"({"resize": )") + v + "}", "resize",
                   "stretch, letterbox, center_crop");
  for (const char* v : {"-1", "256", "1.5", "\"114\""})
    expect_refused(std::string(R"({"resize": "letterbox", "pad_value": )") + v + "}", "pad_value",
                   "between 0 and 255");
  expect_refused(R"({"pad_value": 0})", "pad_value", "only valid with \"resize\": \"letterbox\"");
  expect_refused(R"({"resize": "stretch", "pad_value": 0})", "pad_value", "only valid");
  for (const char* v : {"[]", "\"bracket\"", "[\"a\", 1]"})
    expect_refused(std::string(R"({"object_classes": )") + v + "}", "object_classes", "label");
  for (const char* v : {"[\"\"]", "[\"a,b\"]", "[\" a\"]", "[\"a \"]"})
    expect_refused(std::string(R"({"object_classes": )") + v + "}", "object_classes",
                   "without commas or surrounding blanks");
  expect_refused(R"({"object_classes": ["a", "b", "a"]})", "object_classes", "listed twice");
  std::string many = R"({"object_classes": [)";
  for (int i = 0; i < 1001; ++i) many += (i ? ",\"c" : "\"c") + std::to_string(i) + "\"";
  expect_refused(many + "]}", "object_classes", "1 to 1000");
  for (const char* k : {"tile_width", "tile_height"})
    for (const char* v : {"-1", "65536", "640.5", "\"640\"", "null", "[640]", "true"})
      expect_refused(std::string("{\"") + k + "\": " + v + "}", k, "between 0 and 65535");
  for (const char* v : {"-0.1", "0.95", "1", "\"0.2\"", "null", "[0.2]", "false"})
    expect_refused(std::string(R"({"tile_overlap": )") + v + "}", "tile_overlap",
                   "between 0 and 0.9");
  // Near misses of the new keys stay unknown (typos).
  for (const char* k : {"object-padding", "objectPadding", "object_class", "padding", "resize_mode",
                        "tile-width", "tile_size", "tileOverlap", "tile_w"})
    expect_refused(std::string("{\"") + k + "\": 0}", k, "unknown field");
}

TEST(ModelContract, PropertyBeatsSidecarBeatsDefaultAndSaysSo) {
  InputContract sidecar;
  ResolvedContract r = resolve_contract(sidecar, {});
  EXPECT_EQ(r.object_padding.value, 0.0);
  EXPECT_EQ(r.resize.value, ResizeMode::kStretch);
  EXPECT_EQ(r.pad_value.value, 114);
  EXPECT_TRUE(r.object_classes.value.empty());
  EXPECT_EQ(r.tile_width.value, 0);
  EXPECT_EQ(r.tile_height.value, 0);
  EXPECT_EQ(r.tile_overlap.value, 0.2);
  EXPECT_EQ(describe(r),
            "object-padding 0 (default), resize stretch (default), pad-value 114 (default), "
            "object-class (every region) (default), tile-width input (default), tile-height "
            "input (default), tile-overlap 0.2 (default)");

  sidecar.object_padding = 0.1;
  sidecar.resize = ResizeMode::kLetterbox;
  sidecar.pad_value = 0;
  sidecar.object_classes = std::vector<std::string>{"bracket", "washer"};
  sidecar.tile_width = 640;
  sidecar.tile_height = 480;
  sidecar.tile_overlap = 0.1;
  r = resolve_contract(sidecar, {});
  EXPECT_EQ(describe(r),
            "object-padding 0.1 (sidecar), resize letterbox (sidecar), pad-value 0 (sidecar), "
            "object-class bracket,washer (sidecar), tile-width 640 (sidecar), tile-height 480 "
            "(sidecar), tile-overlap 0.1 (sidecar)");

  ContractOverrides props;
  props.object_padding = 0.0;
  props.keep_aspect_ratio = false;
  props.pad_value = 7;
  props.object_classes = std::vector<std::string>{};  // object-class="": every region
  props.tile_width = 0;                               // set to its default: still the property's
  props.tile_height = 320;
  props.tile_overlap = 0.2;
  r = resolve_contract(sidecar, props);
  EXPECT_EQ(describe(r),
            "object-padding 0 (property), resize stretch (property), pad-value 7 (property), "
            "object-class (every region) (property), tile-width input (property), tile-height "
            "320 (property), tile-overlap 0.2 (property)");
  props.keep_aspect_ratio = true;
  sidecar.resize = ResizeMode::kCenterCrop;
  EXPECT_EQ(resolve_contract(sidecar, props).resize.value, ResizeMode::kLetterbox);
}

// center_crop: a 8x4 frame into a 4x4 input reads columns 2..5, stretched
// 1:1 (the transform maps frame x 2 to model x 0); a 4x8 frame rows 2..5.
TEST(ModelContract, CenterCropCutsTheRegionToTheInputsAspectAroundItsCentre) {
  for (const bool wide : {true, false}) {
    cv::Mat rgb(wide ? 4 : 8, wide ? 8 : 4, CV_8UC3);
    for (int i = 0; i < 4 * 8 * 3; ++i) rgb.data[i] = static_cast<uchar>(i);
    const OwnedFrame f = make_frame(rgb, PixelFormat::kRGB);
    PreprocessOptions o;
    o.out_width = o.out_height = 4;
    o.center_crop = true;
    Preprocessor pre(o);
    AlignedBuffer dst(o.slot_bytes());
    const FrameTransform t = pre.run(f.view, dst.data<float>());
    EXPECT_DOUBLE_EQ(t.scale_x, 1.0);
    EXPECT_DOUBLE_EQ(t.scale_y, 1.0);
    EXPECT_DOUBLE_EQ(t.offset_x, wide ? -2.0 : 0.0);
    EXPECT_DOUBLE_EQ(t.offset_y, wide ? 0.0 : -2.0);
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x)
        for (int c = 0; c < 3; ++c) {
          const int fx = wide ? x + 2 : x, fy = wide ? y : y + 2;
          EXPECT_FLOAT_EQ(dst.data<float>()[(y * 4 + x) * 3 + c], rgb.at<cv::Vec3b>(fy, fx)[c])
              << wide << " " << x << "," << y;
        }
  }
}

// A crop first, then the centre cut inside it; YUY2 starts on an even column.
TEST(ModelContract, CenterCropInsideACropKeepsTheChromaAlignment) {
  cv::Mat rgb(8, 16, CV_8UC3, cv::Scalar(10, 20, 30));
  const OwnedFrame f = make_frame(rgb, PixelFormat::kYUY2);
  PreprocessOptions o;
  o.out_width = o.out_height = 2;
  o.center_crop = true;
  o.crop = {2, 1, 9, 4};  // 9x4 -> a 4x4 cut from 2 + (9 - 4) / 2 = 4 (even)
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  const FrameTransform t = pre.run(f.view, dst.data<float>());
  EXPECT_DOUBLE_EQ(t.scale_x, 0.5);
  EXPECT_DOUBLE_EQ(t.offset_x, -4 * 0.5);
  EXPECT_DOUBLE_EQ(t.scale_y, 0.5);
  EXPECT_DOUBLE_EQ(t.offset_y, -1 * 0.5);
}
