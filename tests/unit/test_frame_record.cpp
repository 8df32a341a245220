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
  EXPECT_FALSE(j.contains("skip")) << "not said: no key";
  r.skip = "still";  // inference-gate=motion
  EXPECT_EQ(json::parse(to_json_line(r, false, 0))["skip"], "still");
  r.inferred = true;
  EXPECT_FALSE(json::parse(to_json_line(r, false, 0)).contains("skip"));
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

namespace {

DetectionRecord bolt() {
  DetectionRecord d;
  d.box.label = "bolt";
  d.box.label_id = 0;
  d.box.confidence = 0.5;
  d.box.x_min = 64;
  d.box.y_min = 48;
  d.box.x_max = 128;
  d.box.y_max = 96;
  d.nx_min = 0.25;
  d.ny_min = 0.25;
  d.nx_max = 0.5;
  d.ny_max = 0.5;
  return d;
}

}  // namespace

// torchtrack's id rides on its detection; lines without it are unchanged.
TEST(FrameRecord, TrackedDetectionsCarryObjectIdAndPredicted) {
  FrameRecord r;
  r.width = 256;
  r.height = 192;
  r.detections = {bolt(), bolt(), bolt()};
  const std::string untracked = to_json_line(r, false, 0);
  const std::string det =
      "{\"label\":\"bolt\",\"label_id\":0,\"confidence\":0.5,"
      "\"box\":{\"x_min\":64.0,\"y_min\":48.0,\"x_max\":128.0,\"y_max\":96.0},"
      "\"box_normalized\":{\"x_min\":0.25,\"y_min\":0.25,\"x_max\":0.5,\"y_max\":0.5}";
  EXPECT_EQ(untracked,
            "{\"frame\":0,\"pts\":null,\"dts\":null,\"duration\":null,\"width\":256,"
            "\"height\":192,\"detections\":[" +
                det + "}," + det + "}," + det + "}]}");
  r.detections[0].object_id = 3;
  r.detections[2].object_id = 12;
  r.detections[2].predicted = true;
  EXPECT_EQ(to_json_line(r, false, 0),
            "{\"frame\":0,\"pts\":null,\"dts\":null,\"duration\":null,\"width\":256,"
            "\"height\":192,\"detections\":[" +
                det + ",\"object_id\":3,\"predicted\":false}," + det + "}," + det +
                ",\"object_id\":12,\"predicted\":true}]}");
}

TEST(FrameRecord, TrackEventsOnlyWhenTheFrameHasThem) {
  FrameRecord r;
  r.has_inference = true;
  r.pts_ns = 2000;
  const std::string plain = to_json_line(r, false, 0);
  EXPECT_EQ(plain.find("track_events"), std::string::npos) << plain;

  TrackEventRecord started;
  started.id = 4;
  started.label = "washer";
  started.label_id = 1;
  started.pts_ns = 2000;
  started.stream_id = "cam0";
  started.age = 3;
  TrackEventRecord ended;
  ended.ended = true;
  ended.id = 2;
  ended.label = "bolt";
  ended.pts_ns = 2000;
  ended.stream_id = "cam0";
  ended.age = 40;
  ended.reason = "lost";
  ended.last_seen_pts_ns = 1000;
  TrackEventRecord unseen = ended;
  unseen.id = 1;
  unseen.last_seen_pts_ns.reset();
  r.track_events = {started, ended, unseen};
  const std::string line = to_json_line(r, false, 0);
  // After the detections, and the rest of the line as before.
  EXPECT_EQ(line, plain.substr(0, plain.size() - 1) +
                      ",\"track_events\":["
                      "{\"event\":\"started\",\"id\":4,\"label\":\"washer\",\"label_id\":1,"
                      "\"pts\":2000,\"stream_id\":\"cam0\",\"age\":3},"
                      "{\"event\":\"ended\",\"id\":2,\"label\":\"bolt\",\"label_id\":0,"
                      "\"pts\":2000,\"stream_id\":\"cam0\",\"age\":40,\"reason\":\"lost\","
                      "\"last_seen_pts\":1000},"
                      "{\"event\":\"ended\",\"id\":1,\"label\":\"bolt\",\"label_id\":0,"
                      "\"pts\":2000,\"stream_id\":\"cam0\",\"age\":40,\"reason\":\"lost\","
                      "\"last_seen_pts\":null}]}");
  // A frame without torchinfer results (torchtrack on another detector's
  // output) still lists them.
  FrameRecord bare;
  bare.track_events = {started};
  EXPECT_EQ(json::parse(to_json_line(bare, false, 0))["track_events"][0]["id"], 4);
}

TEST(FrameRecord, CodesOnDetectionsAndOnTheFrameOnlyWhenRead) {
  FrameRecord r;
  r.width = 256;
  r.height = 192;
  r.detections = {bolt(), bolt()};
  r.detections[1].code = CodeRecord{"DataMatrix", "SN-\"7\"", 70, 50, 102.5, 82};
  const std::string det =
      "{\"label\":\"bolt\",\"label_id\":0,\"confidence\":0.5,"
      "\"box\":{\"x_min\":64.0,\"y_min\":48.0,\"x_max\":128.0,\"y_max\":96.0},"
      "\"box_normalized\":{\"x_min\":0.25,\"y_min\":0.25,\"x_max\":0.5,\"y_max\":0.5}";
  const std::string code =
      "{\"format\":\"DataMatrix\",\"text\":\"SN-\\\"7\\\"\","
      "\"box\":{\"x_min\":70.0,\"y_min\":50.0,\"x_max\":102.5,\"y_max\":82.0}}";
  const std::string head =
      "{\"frame\":0,\"pts\":null,\"dts\":null,\"duration\":null,\"width\":256,\"height\":192,";
  EXPECT_EQ(to_json_line(r, false, 0),
            head + "\"detections\":[" + det + "}," + det + ",\"code\":" + code + "}]}");
  r.detections.clear();
  r.codes.emplace();
  EXPECT_EQ(to_json_line(r, false, 0), head + "\"codes\":[]}");
  r.codes->push_back(CodeRecord{"DataMatrix", "SN-\"7\"", 70, 50, 102.5, 82});
  EXPECT_EQ(to_json_line(r, false, 0), head + "\"codes\":[" + code + "]}");
}
