#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "export/frame_record.h"

using namespace torchinfer;
using nlohmann::json;

TEST(FrameRecord, FullLine) {
  FrameRecord r;
  r.frame_number = 7;
  r.pts_ns = 233333333;
  r.duration_ns = 33333333;
  r.stream_id = "cam0";
  r.width = 640;
  r.height = 480;
  r.has_inference = true;
  r.model = "m.pt";
  r.input_width = 48;
  r.input_height = 32;
  r.inference_ms = 1.5;
  r.queue_ms = 0.25;
  r.batch_size = 4;
  r.batch_index = 2;
  r.classification.push_back({2, "gamma", 0.75});
  std::vector<float> data{1.f, -2.f, NAN};
  TensorView t;
  t.name = "output";
  t.dims = {1, 3};
  t.data = data.data();
  t.bytes = 12;
  r.tensors.push_back(t);

  const std::string line = to_json_line(r, true, 2);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["frame"], 7);
  EXPECT_EQ(j["pts"], 233333333);
  EXPECT_TRUE(j["dts"].is_null());
  EXPECT_EQ(j["duration"], 33333333);
  EXPECT_EQ(j["stream_id"], "cam0");
  EXPECT_EQ(j["width"], 640);
  EXPECT_EQ(j["input"]["width"], 48);
  EXPECT_DOUBLE_EQ(j["latency"]["inference_ms"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["latency"]["queue_ms"].get<double>(), 0.25);
  EXPECT_EQ(j["batch"]["size"], 4);
  EXPECT_EQ(j["batch"]["index"], 2);
  EXPECT_EQ(j["inferred"], true);
  EXPECT_FALSE(j.contains("result_pts"));
  EXPECT_EQ(j["classification"][0]["label"], "gamma");
  EXPECT_EQ(j["classification"][0]["label_id"], 2);
  EXPECT_DOUBLE_EQ(j["classification"][0]["confidence"].get<double>(), 0.75);
  EXPECT_EQ(j["tensors"][0]["dims"], json::array({1, 3}));
  EXPECT_EQ(j["tensors"][0]["data"], json::array({1.0, -2.0}));
  EXPECT_EQ(j["tensors"][0]["truncated"], true);
  // Stable key order: frame and timestamps first, for people reading logs.
  EXPECT_EQ(line.rfind("{\"frame\":7,\"pts\":233333333", 0), 0u) << line;
}

TEST(FrameRecord, ReusedResultNamesItsFrame) {
  FrameRecord r;
  r.has_inference = true;
  r.inferred = false;
  r.result_pts_ns = 100;
  const json j = json::parse(to_json_line(r, false, 0));
  EXPECT_EQ(j["inferred"], false);
  EXPECT_EQ(j["result_pts"], 100);
}

TEST(FrameRecord, NonFiniteBecomesNull) {
  FrameRecord r;
  r.has_inference = true;
  std::vector<float> data{INFINITY, NAN};
  TensorView t;
  t.name = "o";
  t.dims = {2};
  t.data = data.data();
  t.bytes = 8;
  r.tensors.push_back(t);
  const json j = json::parse(to_json_line(r, true, 100));
  EXPECT_TRUE(j["tensors"][0]["data"][0].is_null());
  EXPECT_TRUE(j["tensors"][0]["data"][1].is_null());
  EXPECT_FALSE(j["tensors"][0].contains("truncated"));
}

TEST(FrameRecord, NoInferenceHasNoModelFields) {
  FrameRecord r;
  r.frame_number = 1;
  const json j = json::parse(to_json_line(r, true, 10));
  EXPECT_FALSE(j.contains("model"));
  EXPECT_FALSE(j.contains("classification"));
  EXPECT_FALSE(j.contains("tensors"));
  EXPECT_TRUE(j["pts"].is_null());
}

TEST(FrameRecord, TensorsOnlyWhenAsked) {
  FrameRecord r;
  r.has_inference = true;
  const json j = json::parse(to_json_line(r, false, 10));
  EXPECT_FALSE(j.contains("tensors"));
  EXPECT_TRUE(j["classification"].is_array());
}

TEST(FrameRecord, InvalidResultSaysSoAndValidLinesAreUnchanged) {
  FrameRecord r;
  r.has_inference = true;
  r.model = "m.pt";
  const std::string valid_line = to_json_line(r, false, 0);
  EXPECT_EQ(valid_line.find("\"valid\""), std::string::npos) << valid_line;
  r.valid = false;
  const std::string line = to_json_line(r, false, 0);
  const json j = json::parse(line);
  EXPECT_EQ(j["valid"], false);
  // The only difference: the flag, after "inferred".
  EXPECT_EQ(line, valid_line.substr(0, valid_line.find(",\"classification\"")) +
                      ",\"valid\":false" +
                      valid_line.substr(valid_line.find(",\"classification\"")));
}
