#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "common/model_config.h"
#include "test_paths.h"

using namespace torchinfer;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Asserts parsing fails with kConfigInvalid and a message naming the field.
void expect_field_error(const std::string& json, const std::string& field) {
  try {
    parse_model_config_text(json, "m.json");
    FAIL() << "accepted: " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ModelConfig, DefaultsAreTorchvisionConventions) {
  ModelConfig c;
  EXPECT_EQ(c.input_width, 224);
  EXPECT_EQ(c.input_height, 224);
  EXPECT_EQ(c.channel_order, ChannelOrder::kRGB);
  EXPECT_EQ(c.task, Task::kClassification);
  // pixel 255 in channel 0 -> (1 - 0.485) / 0.229
  EXPECT_NEAR(255 * c.alpha[0] + c.beta[0], (1 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(0 * c.alpha[2] + c.beta[2], -0.406 / 0.225, 1e-5);
}

TEST(ModelConfig, ParsesEveryField) {
  const auto c = parse_model_config_text(
      R"({"input_width": 48, "input_height": 32, "channel_order": "bgr", "mean": [0.5, 0.4, 0.3],
          "std": [0.25, 0.2, 0.15], "task": "raw", "labels": ["a", "b"], "top_k": 2,
          "output_activation": "sigmoid", "_comment": "ignored"})",
      "m.json");
  EXPECT_EQ(c.input_width, 48);
  EXPECT_EQ(c.input_height, 32);
  EXPECT_EQ(c.channel_order, ChannelOrder::kBGR);
  EXPECT_EQ(c.task, Task::kRaw);
  EXPECT_EQ(c.output_activation, Activation::kSigmoid);
  EXPECT_EQ(c.top_k, 2);
  EXPECT_EQ(c.labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_NEAR(128 * c.alpha[1] + c.beta[1], (128 / 255.0 - 0.4) / 0.2, 1e-5);
}

TEST(ModelConfig, InputDtype) {
  EXPECT_FALSE(parse_model_config_text("{}", "m.json").input_uint8);
  EXPECT_TRUE(parse_model_config_text(R"({"input_dtype": "uint8"})", "m.json").input_uint8);
  EXPECT_FALSE(parse_model_config_text(R"({"input_dtype": "float32"})", "m.json").input_uint8);
  ConfigOverrides o;
  o.input_uint8 = true;
  EXPECT_TRUE(resolve_model_config("x.pt", "", o).input_uint8);
}

TEST(ModelConfig, InputLayout) {
  EXPECT_EQ(parse_model_config_text("{}", "m.json").input_layout, InputLayout::kNCHW);
  EXPECT_EQ(parse_model_config_text(R"({"input_layout": "nhwc"})", "m.json").input_layout,
            InputLayout::kNHWC);
  EXPECT_EQ(parse_model_config_text(R"({"input_layout": "nchw"})", "m.json").input_layout,
            InputLayout::kNCHW);
  ConfigOverrides o;
  o.input_layout = InputLayout::kNHWC;
  EXPECT_EQ(resolve_model_config("x.pt", "", o).input_layout, InputLayout::kNHWC);
  EXPECT_STREQ(to_string(InputLayout::kNHWC), "nhwc");
}

TEST(ModelConfig, ScaleOffset) {
  const auto c = parse_model_config_text(R"({"scale": 0.0078125, "offset": -1})", "m.json");
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(c.alpha[i], 0.0078125f);
    EXPECT_FLOAT_EQ(c.beta[i], -1.f);
  }
}

TEST(ModelConfig, GrayTakesOneValue) {
  const auto c = parse_model_config_text(
      R"({"channel_order": "gray", "mean": [0.5], "std": [0.5]})", "m.json");
  EXPECT_EQ(c.channels(), 1);
  EXPECT_NEAR(255 * c.alpha[0] + c.beta[0], 1.0, 1e-6);
}

TEST(ModelConfig, LabelsFileRelativeToSidecar) {
  const std::string dir = testing::TempDir();
  write_temp("cfg_labels.txt", "zero\none\r\ntwo\n\n");
  const auto json = write_temp("cfg_with_labels.json", R"({"labels": "cfg_labels.txt"})");
  const auto c = parse_model_config(json);
  EXPECT_EQ(c.labels, (std::vector<std::string>{"zero", "one", "two"}));
  EXPECT_EQ(c.source, json);
}

TEST(ModelConfig, ShippedTestSidecarParses) {
  const auto c = parse_model_config(test::model_path("tiny_classifier.json"));
  EXPECT_EQ(c.input_width, 48);
  EXPECT_EQ(c.input_height, 32);
  EXPECT_EQ(c.top_k, 3);
  EXPECT_EQ(c.labels.size(), 5u);
  EXPECT_EQ(c.labels[0], "alpha");
}

TEST(ModelConfig, DefaultSidecarFoundBesideModel) {
  EXPECT_EQ(default_sidecar_path(test::model_path("tiny_classifier.pt")),
            test::model_path("tiny_classifier.json"));
  EXPECT_EQ(default_sidecar_path(test::model_path("two_inputs.pt")), "");
}

TEST(ModelConfig, OverridesWinOverSidecar) {
  ConfigOverrides o;
  o.input_width = 100;
  o.channel_order = ChannelOrder::kBGR;
  o.mean = std::vector<float>{0.f};
  o.std = std::vector<float>{1.f};
  o.top_k = 1;
  o.task = Task::kRaw;
  const auto c = resolve_model_config(test::model_path("tiny_classifier.pt"), "", o);
  EXPECT_EQ(c.input_width, 100);
  EXPECT_EQ(c.input_height, 32);  // still from the sidecar
  EXPECT_EQ(c.channel_order, ChannelOrder::kBGR);
  EXPECT_EQ(c.top_k, 1);
  EXPECT_EQ(c.task, Task::kRaw);
  EXPECT_FLOAT_EQ(c.alpha[2], 1.f / 255.f);
  EXPECT_FLOAT_EQ(c.beta[2], 0.f);
}

TEST(ModelConfig, NoSidecarMeansDefaults) {
  const auto c = resolve_model_config(test::model_path("two_inputs.pt"), "", {});
  EXPECT_EQ(c.input_width, 224);
  EXPECT_TRUE(c.source.empty());
}

TEST(ModelConfig, FloatListParsing) {
  EXPECT_EQ(parse_float_list("0.5, 0.25 ,1"), (std::vector<float>{0.5f, 0.25f, 1.f}));
  EXPECT_EQ(parse_float_list("2"), (std::vector<float>{2.f}));
}

// ---- negative cases -------------------------------------------------------

TEST(ModelConfigErrors, FloatListRejectsJunk) {
  for (const char* bad : {"", "abc", "1,,2", "1,2", "1,2,3,4", "0.5x", "nan", "1;2;3"})
    EXPECT_THROW(parse_float_list(bad), Error) << bad;
}

TEST(ModelConfigErrors, NotJson) {
  EXPECT_THROW(parse_model_config_text("{input_width: 3", "m.json"), Error);
  EXPECT_THROW(parse_model_config_text("[1, 2]", "m.json"), Error);
}

TEST(ModelConfigErrors, EachFieldNamed) {
  expect_field_error(R"({"input_width": 0})", "input_width");
  expect_field_error(R"({"input_width": 9000})", "input_width");
  expect_field_error(R"({"input_height": "64"})", "input_height");
  expect_field_error(R"({"input_height": 3.5})", "input_height");
  expect_field_error(R"({"channel_order": "rgba"})", "channel_order");
  expect_field_error(R"({"mean": [0.1, 0.2]})", "mean");
  expect_field_error(R"({"mean": "zero"})", "mean");
  expect_field_error(R"({"std": [0.2, 0, 0.2]})", "std");
  expect_field_error(R"({"std": [-1]})", "std");
  expect_field_error(R"({"mean": 0.5, "scale": 0.1})", "scale");
  expect_field_error(R"({"scale": "big"})", "scale");
  expect_field_error(R"({"task": "segmentation"})", "task");
  expect_field_error(R"({"labels": [1, 2]})", "labels");
  expect_field_error(R"({"labels": "no_such_file.labels"})", "labels");
  expect_field_error(R"({"top_k": 0})", "top_k");
  expect_field_error(R"({"output_activation": "relu"})", "output_activation");
  expect_field_error(R"({"input_dtype": "int16"})", "input_dtype");
  expect_field_error(R"({"input_layout": "chw"})", "input_layout");
  expect_field_error(R"({"input_layout": 1})", "input_layout");
  expect_field_error(R"({"input_widht": 3})", "input_widht");
  expect_field_error(R"({"channel_order": "gray", "mean": [0.1, 0.2, 0.3]})", "mean");
}

TEST(ModelConfigErrors, MissingExplicitSidecarIsNotFound) {
  try {
    resolve_model_config("x.pt", "/nonexistent/m.json", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/m.json"), std::string::npos);
  }
}

TEST(ModelConfigErrors, MissingLabelsFile) {
  ConfigOverrides o;
  o.labels_file = "/nonexistent/labels.txt";
  EXPECT_THROW(resolve_model_config("x.pt", "", o), Error);
  const auto empty = write_temp("empty.labels", "\n\n");
  EXPECT_THROW(read_labels_file(empty), Error);
}

TEST(ModelConfig, PrecisionField) {
  EXPECT_EQ(ModelConfig().precision, ModelPrecision::kFp32);
  EXPECT_EQ(parse_model_config_text(R"({"precision": "fp32"})", "m.json").precision,
            ModelPrecision::kFp32);
  const ModelConfig q = parse_model_config_text(
      R"({"precision": "int8", "quantization": {"backend": "onednn", "top1_agreement": 0.99}})",
      "m.json");
  EXPECT_EQ(q.precision, ModelPrecision::kInt8);
  EXPECT_FALSE(q.accuracy_guard_forced);
  EXPECT_TRUE(parse_model_config_text(R"({"precision": "int8", "quantization": {"forced": true}})",
                                      "m.json")
                  .accuracy_guard_forced);
  EXPECT_STREQ(to_string(ModelPrecision::kInt8), "int8");
}

TEST(ModelConfigErrors, PrecisionField) {
  expect_field_error(R"({"precision": "int4"})", "precision");
  expect_field_error(R"({"precision": "bf16"})", "precision");
  expect_field_error(R"({"precision": 8})", "precision");
  expect_field_error(R"({"precision": "int8", "quantization": []})", "quantization");
  expect_field_error(R"({"quantization": {}})", "quantization");
  expect_field_error(R"({"precision": "int8", "quantization": {"forced": "yes"}})",
                     "quantization.forced");
}

TEST(ModelConfig, DetectionFields) {
  const ModelConfig c = parse_model_config_text(
      R"({"task": "detection", "decoder": "yolov5", "confidence_threshold": 0.3,
          "iou_threshold": 0.5, "max_detections": 20})",
      "m.json");
  EXPECT_EQ(c.task, Task::kDetection);
  ASSERT_TRUE(c.decoder.has_value());
  EXPECT_EQ(*c.decoder, Decoder::kYolov5);
  EXPECT_DOUBLE_EQ(*c.confidence_threshold, 0.3);
  EXPECT_DOUBLE_EQ(*c.iou_threshold, 0.5);
  EXPECT_EQ(*c.max_detections, 20);
  for (const auto& [name, want] :
       std::vector<std::pair<std::string, Decoder>>{{"yolov8", Decoder::kYolov8},
                                                    {"ssd", Decoder::kSsd},
                                                    {"classification", Decoder::kClassification}}) {
    const ModelConfig d = parse_model_config_text(R"({"decoder": ")" + name + "\"}", "m.json");
    EXPECT_EQ(*d.decoder, want);
    EXPECT_STREQ(to_string(want), name.c_str());
  }
  const ModelConfig none = parse_model_config_text("{}", "m.json");
  EXPECT_FALSE(none.decoder || none.confidence_threshold || none.iou_threshold ||
               none.max_detections || none.mask_threshold);
}

TEST(ModelConfig, MaskThreshold) {
  const ModelConfig c =
      parse_model_config_text(R"({"decoder": "yolov8-seg", "mask_threshold": 0.3})", "m.json");
  ASSERT_TRUE(c.mask_threshold.has_value());
  EXPECT_DOUBLE_EQ(*c.mask_threshold, 0.3);
  EXPECT_DOUBLE_EQ(*parse_model_config_text(R"({"mask_threshold": 0})", "m.json").mask_threshold,
                   0.0);
  EXPECT_DOUBLE_EQ(*parse_model_config_text(R"({"mask_threshold": 1})", "m.json").mask_threshold,
                   1.0);
  expect_field_error(R"({"mask_threshold": 1.01})", "mask_threshold");
  expect_field_error(R"({"mask_threshold": -0.5})", "mask_threshold");
  expect_field_error(R"({"mask_threshold": "0.5"})", "mask_threshold");
  expect_field_error(R"({"mask_treshold": 0.5})", "mask_treshold");
}

TEST(ModelConfigErrors, DetectionFields) {
  expect_field_error(R"({"decoder": "yolov3"})", "decoder");
  expect_field_error(R"({"decoder": 5})", "decoder");
  expect_field_error(R"({"confidence_threshold": 1.5})", "confidence_threshold");
  expect_field_error(R"({"confidence_threshold": "high"})", "confidence_threshold");
  expect_field_error(R"({"iou_threshold": -0.1})", "iou_threshold");
  expect_field_error(R"({"max_detections": 0})", "max_detections");
  expect_field_error(R"({"max_detections": 2.5})", "max_detections");
}
