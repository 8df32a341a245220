// A camera's "inference_gate" and "inference_region" (docs/server.md,
// "Motion gate and tiles"): read into torchinfer's values, written back by
// to_json, and every bad value refused with its field named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/core/server_config.h"

using nlohmann::json;
using namespace torchinfer::server;

namespace {

const json kModels = {{{"id", "parts"}, {"path", "models/demo/parts_detector.pt"}}};

StreamSpec stream_of(const json& extra) {
  json s = {{"id", "cam0"}, {"uri", "file:///x.mkv"}};
  s.update(extra);
  return parse_server_config({{"models", kModels}, {"streams", json::array({s})}}, "server.json")
      .streams.at(0);
}

// The field path and message of the error a stream's fields raise.
std::pair<std::string, std::string> error_of(const json& extra) {
  try {
    stream_of(extra);
  } catch (const torchinfer::FieldError& e) {
    return {e.field(), e.what()};
  }
  return {"(no error)", ""};
}

}  // namespace

TEST(InferenceSettings, UnsetKeepsTheElementsDefaults) {
  const StreamSpec s = stream_of(json::object());
  EXPECT_FALSE(s.inference.motion_gate);
  EXPECT_FALSE(s.inference.tiles);
  EXPECT_FALSE(s.inference.motion_threshold || s.inference.motion_min_area ||
               s.inference.motion_hold || s.inference.motion_keyframe_interval ||
               s.inference.tile_width || s.inference.tile_height || s.inference.tile_overlap);
  EXPECT_FALSE(to_json(s).contains("inference_gate"));
  EXPECT_FALSE(to_json(s).contains("inference_region"));
  EXPECT_FALSE(stream_of({{"inference_gate", "none"}}).inference.motion_gate);
  EXPECT_FALSE(stream_of({{"inference_region", "full-frame"}}).inference.tiles);
}

TEST(InferenceSettings, ReadsTheMotionGateAndTilesAndWritesThemBack) {
  const json fields = {{"inference_gate", "motion"},
                       {"motion_threshold", 12.5},
                       {"motion_min_area", 0.02},
                       {"motion_hold", 5},
                       {"motion_keyframe_interval", 60},
                       {"inference_region", "tiles"},
                       {"tile_width", 640},
                       {"tile_height", 480},
                       {"tile_overlap", 0.25}};
  const StreamSpec s = stream_of(fields);
  EXPECT_TRUE(s.inference.motion_gate);
  EXPECT_EQ(s.inference.motion_threshold, 12.5);
  EXPECT_EQ(s.inference.motion_min_area, 0.02);
  EXPECT_EQ(s.inference.motion_hold, 5);
  EXPECT_EQ(s.inference.motion_keyframe_interval, 60);
  EXPECT_TRUE(s.inference.tiles);
  EXPECT_EQ(s.inference.tile_width, 640);
  EXPECT_EQ(s.inference.tile_height, 480);
  EXPECT_EQ(s.inference.tile_overlap, 0.25);
  const json back = to_json(s);
  for (const auto& [k, v] : fields.items()) EXPECT_EQ(back.at(k), v) << k;
  // The edges of each range are accepted.
  const StreamSpec edges = stream_of({{"inference_gate", "motion"},
                                      {"motion_threshold", 0},
                                      {"motion_min_area", 1},
                                      {"motion_hold", 0},
                                      {"motion_keyframe_interval", 1},
                                      {"inference_region", "tiles"},
                                      {"tile_width", 0},
                                      {"tile_overlap", 0.9}});
  EXPECT_EQ(edges.inference.motion_keyframe_interval, 1);
  EXPECT_EQ(edges.inference.tile_overlap, 0.9);
}

TEST(InferenceSettings, BadValuesAreRefusedNamingTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"inference_gate", "movement"}}, "inference_gate"},
      {{{"inference_gate", true}}, "inference_gate"},
      {{{"inference_region", "roi-list"}}, "inference_region"},
      {{{"inference_region", 1}}, "inference_region"},
      {{{"inference_gate", "motion"}, {"motion_threshold", 256}}, "motion_threshold"},
      {{{"inference_gate", "motion"}, {"motion_threshold", -1}}, "motion_threshold"},
      {{{"inference_gate", "motion"}, {"motion_threshold", "8"}}, "motion_threshold"},
      {{{"inference_gate", "motion"}, {"motion_min_area", 1.5}}, "motion_min_area"},
      {{{"inference_gate", "motion"}, {"motion_hold", -1}}, "motion_hold"},
      {{{"inference_gate", "motion"}, {"motion_hold", 2.5}}, "motion_hold"},
      {{{"inference_gate", "motion"}, {"motion_keyframe_interval", 0}}, "motion_keyframe_interval"},
      {{{"inference_region", "tiles"}, {"tile_width", -1}}, "tile_width"},
      {{{"inference_region", "tiles"}, {"tile_height", 65536}}, "tile_height"},
      {{{"inference_region", "tiles"}, {"tile_overlap", 0.95}}, "tile_overlap"},
      {{{"motion_threshold", 8}}, "motion_threshold"},
      {{{"inference_gate", "none"}, {"motion_hold", 3}}, "motion_hold"},
      {{{"tile_width", 640}}, "tile_width"},
      {{{"inference_region", "full-frame"}, {"tile_overlap", 0.1}}, "tile_overlap"},
      {{{"inference_region", "tiles"},
        {"roi", {{"x", 0}, {"y", 0}, {"width", 10}, {"height", 10}}}},
       "roi"},
      {{{"motion_treshold", 8}}, "motion_treshold"},
  };
  for (const auto& [extra, field] : cases) {
    const auto [got, msg] = error_of(extra);
    EXPECT_EQ(got, "streams[0]." + field) << extra;
    EXPECT_NE(msg.find("server.json: streams[0]." + field + ": "), std::string::npos) << msg;
  }
  EXPECT_NE(error_of({{"tile_width", 640}}).second.find("\"inference_region\": \"tiles\" only"),
            std::string::npos);
  EXPECT_NE(error_of({{"motion_hold", 1}}).second.find("\"inference_gate\": \"motion\" only"),
            std::string::npos);
}
