// torchinfer-server's configuration schema: every field read, every bad
// input refused with the field named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/core/server_config.h"

using nlohmann::json;
using namespace torchinfer::server;

namespace {

const json kModels = {{{"id", "parts"}, {"path", "models/demo/parts_detector.pt"}}};

json config_with(json stream) {
  return {{"models", kModels}, {"streams", json::array({stream})}};
}

// The field path and message of the error a config raises.
std::pair<std::string, std::string> error_of(const json& j) {
  try {
    parse_server_config(j, "server.json");
  } catch (const torchinfer::FieldError& e) {
    return {e.field(), e.what()};
  }
  return {"(no error)", ""};
}

std::pair<std::string, std::string> stream_error(const json& s) {
  return error_of(config_with(s));
}

}  // namespace

TEST(ServerConfig, ReadsEveryField) {
  const json j = {{"models",
                   {{{"id", "parts"},
                     {"path", "m.pt"},
                     {"batch_size", 8},
                     {"batch_timeout_us", 20000},
                     {"threads", 2},
                     {"lanes", 2}}}},
                  {"output_dir", "/var/lib/torchinfer"},
                  {"mqtt", {{"host", "broker"}, {"port", 8883}, {"qos", 1}}},
                  {"max_streams", 12},
                  {"max_body_bytes", 4096},
                  {"drain_timeout_s", 2.5},
                  {"streams",
                   {{{"id", "cam0"},
                     {"uri", "file:///clips/line%20one.mkv"},
                     {"model", "parts"},
                     {"loop", false},
                     {"confidence_threshold", 0.6},
                     {"iou_threshold", 0.3},
                     {"inference_interval", 3},
                     {"roi", {{"x", 10}, {"y", 20}, {"width", 300}, {"height", 200}}},
                     {"track", true},
                     {"json", false},
                     {"mqtt_topic", "line1/cam0"},
                     {"restream", true}},
                    {{"id", "cam-1"}, {"uri", "v4l2:///dev/video2"}},
                    {{"id", "cam_2"}, {"uri", "rtsp://10.0.0.5:8554/stream"}}}}};
  const ServerConfig c = parse_server_config(j, "server.json");
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].id, "parts");
  EXPECT_EQ(c.models[0].path, "m.pt");
  EXPECT_EQ(c.models[0].batch_size, 8);
  EXPECT_EQ(c.models[0].batch_timeout_us, 20000);
  EXPECT_EQ(c.models[0].threads, 2);
  EXPECT_EQ(c.models[0].lanes, 2);
  EXPECT_EQ(c.output_dir, "/var/lib/torchinfer");
  EXPECT_EQ(c.mqtt.host, "broker");
  EXPECT_EQ(c.mqtt.port, 8883);
  EXPECT_EQ(c.mqtt.qos, 1);
  EXPECT_EQ(c.max_streams, 12);
  EXPECT_EQ(c.max_body_bytes, 4096u);
  EXPECT_DOUBLE_EQ(c.drain_timeout_s, 2.5);
  ASSERT_EQ(c.streams.size(), 3u);
  const StreamSpec& s = c.streams[0];
  EXPECT_EQ(s.kind, SourceKind::kFile);
  EXPECT_EQ(s.location, "/clips/line one.mkv");
  EXPECT_EQ(s.model, "parts");
  EXPECT_FALSE(s.loop);
  EXPECT_DOUBLE_EQ(*s.confidence_threshold, 0.6);
  EXPECT_DOUBLE_EQ(*s.iou_threshold, 0.3);
  EXPECT_EQ(s.inference_interval, 3);
  ASSERT_TRUE(s.roi.has_value());
  EXPECT_EQ(s.roi->x, 10);
  EXPECT_EQ(s.roi->y, 20);
  EXPECT_EQ(s.roi->width, 300);
  EXPECT_EQ(s.roi->height, 200);
  EXPECT_TRUE(s.track);
  EXPECT_FALSE(s.json);
  EXPECT_EQ(s.mqtt_topic, "line1/cam0");
  EXPECT_TRUE(s.restream);
  EXPECT_EQ(to_json(s)["restream"], true);
  EXPECT_EQ(c.streams[1].kind, SourceKind::kV4l2);
  EXPECT_EQ(c.streams[1].location, "/dev/video2");
  EXPECT_EQ(c.streams[1].model, "parts");  // the only model is the default
  EXPECT_EQ(c.streams[2].kind, SourceKind::kRtsp);
  EXPECT_EQ(c.streams[2].location, "rtsp://10.0.0.5:8554/stream");
  // The stream JSON round-trips through the same schema.
  const StreamSpec again = parse_stream_spec(to_json(s), c.models, c.mqtt, "", "");
  EXPECT_EQ(to_json(again), to_json(s));
}

TEST(ServerConfig, Defaults) {
  const ServerConfig c =
      parse_server_config(config_with({{"id", "a"}, {"uri", "file:///x.mkv"}}), "f");
  EXPECT_EQ(c.output_dir, "out/server");
  EXPECT_EQ(c.max_streams, 32);
  EXPECT_EQ(c.max_body_bytes, 65536u);
  EXPECT_EQ(c.models[0].batch_size, 4);
  EXPECT_EQ(c.models[0].batch_timeout_us, 40000);
  EXPECT_EQ(c.models[0].lanes, 0) << "automatic, as torchinfer's own default";
  const StreamSpec& s = c.streams[0];
  EXPECT_TRUE(s.loop);
  EXPECT_FALSE(s.confidence_threshold.has_value());
  EXPECT_FALSE(s.iou_threshold.has_value());
  EXPECT_EQ(s.inference_interval, 1);
  EXPECT_FALSE(s.roi.has_value());
  EXPECT_FALSE(s.track);
  EXPECT_TRUE(s.json);
  EXPECT_TRUE(s.mqtt_topic.empty());
  EXPECT_FALSE(s.restream);
  EXPECT_EQ(to_json(s)["restream"], false);
}

// The re-stream switch is a boolean, in the file and in a REST body alike.
TEST(ServerConfig, RestreamIsABoolean) {
  for (const json& bad : {json("yes"), json(1), json(nullptr), json({{"enabled", true}})}) {
    auto [field, msg] = stream_error({{"id", "a"}, {"uri", "file:///x"}, {"restream", bad}});
    EXPECT_EQ(field, "streams[0].restream") << bad;
    EXPECT_NE(msg.find("streams[0].restream"), std::string::npos) << msg;
  }
  try {
    parse_stream_spec({{"id", "a"}, {"uri", "file:///x"}, {"restream", "on"}}, {{"parts", "m.pt"}},
                      {}, "", "");
    ADD_FAILURE() << "a string restream was accepted";
  } catch (const torchinfer::FieldError& e) {
    EXPECT_EQ(e.field(), "restream");
  }
  const StreamSpec off = parse_stream_spec({{"id", "a"}, {"uri", "file:///x"}, {"restream", false}},
                                           {{"parts", "m.pt"}}, {}, "", "");
  EXPECT_FALSE(off.restream);
}

TEST(ServerConfig, UnknownFieldsAreNamed) {
  EXPECT_EQ(error_of({{"models", kModels}, {"stream", json::array()}}).first, "stream");
  auto [field, msg] = stream_error({{"id", "a"}, {"uri", "file:///x"}, {"confidence_treshold", 1}});
  EXPECT_EQ(field, "streams[0].confidence_treshold");
  EXPECT_NE(msg.find("server.json: streams[0].confidence_treshold: unknown field"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("confidence_threshold"), std::string::npos) << msg;
  EXPECT_EQ(stream_error({{"id", "a"}, {"uri", "file:///x"}, {"roi", {{"w", 1}}}}).first,
            "streams[0].roi.w");
  json models = kModels;
  models[0]["batch"] = 4;
  EXPECT_EQ(error_of({{"models", models}}).first, "models[0].batch");
}

TEST(ServerConfig, WrongTypesAreNamed) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"id", 5}, {"uri", "file:///x"}}, "streams[0].id"},
      {{{"id", "a"}, {"uri", 1}}, "streams[0].uri"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"loop", "yes"}}, "streams[0].loop"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"confidence_threshold", "0.5"}},
       "streams[0].confidence_threshold"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"inference_interval", 2.5}},
       "streams[0].inference_interval"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"roi", json::array({1, 2, 3, 4})}}, "streams[0].roi"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"track", 1}}, "streams[0].track"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"json", nullptr}}, "streams[0].json"},
  };
  for (const auto& [stream, field] : cases) EXPECT_EQ(stream_error(stream).first, field) << stream;
  EXPECT_EQ(error_of({{"models", kModels}, {"max_streams", "8"}}).first, "max_streams");
  EXPECT_EQ(error_of({{"models", kModels}, {"streams", {{"id", "a"}}}}).first, "streams");
  EXPECT_EQ(error_of(json::array()).first, "(body)");
}

TEST(ServerConfig, RangesAndMissingFields) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"uri", "file:///x"}}, "streams[0].id"},
      {{{"id", "a"}}, "streams[0].uri"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"confidence_threshold", 1.5}},
       "streams[0].confidence_threshold"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"iou_threshold", -0.1}}, "streams[0].iou_threshold"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"inference_interval", 0}},
       "streams[0].inference_interval"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"roi", {{"x", 0}, {"y", 0}, {"width", 10}}}},
       "streams[0].roi.height"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"roi", {{"x", -1}, {"width", 5}, {"height", 5}}}},
       "streams[0].roi.x"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"model", "other"}}, "streams[0].model"},
      {{{"id", "a b"}, {"uri", "file:///x"}}, "streams[0].id"},
      {{{"id", std::string(65, 'a')}, {"uri", "file:///x"}}, "streams[0].id"},
      {{{"id", "a"}, {"uri", "v4l2:///dev/video0"}, {"loop", true}}, "streams[0].loop"},
      {{{"id", "a"}, {"uri", "file:///x"}, {"mqtt_topic", "t"}}, "streams[0].mqtt_topic"},
  };
  for (const auto& [stream, field] : cases) EXPECT_EQ(stream_error(stream).first, field) << stream;
  EXPECT_EQ(error_of({{"models", json::array()}}).first, "models");
  EXPECT_EQ(error_of(json::object()).first, "models");
  json models = kModels;
  models[0]["batch_size"] = 65;
  EXPECT_EQ(error_of({{"models", models}}).first, "models[0].batch_size");
  for (int lanes : {-1, 65}) {
    models = kModels;
    models[0]["lanes"] = lanes;
    EXPECT_EQ(error_of({{"models", models}}).first, "models[0].lanes") << lanes;
  }
  models = json::array({kModels[0], kModels[0]});
  EXPECT_EQ(error_of({{"models", models}}).first, "models[1].id");
  EXPECT_EQ(error_of({{"models", kModels},
                      {"streams",
                       {{{"id", "a"}, {"uri", "file:///x"}}, {{"id", "a"}, {"uri", "file:///y"}}}}})
                .first,
            "streams[1].id");
  EXPECT_EQ(error_of({{"models", kModels},
                      {"max_streams", 1},
                      {"streams",
                       {{{"id", "a"}, {"uri", "file:///x"}}, {{"id", "b"}, {"uri", "file:///y"}}}}})
                .first,
            "streams");
  // An integer too large for any type is out of range, not wrapped.
  EXPECT_EQ(error_of(json::parse(
                         R"({"models":[{"id":"m","path":"p","batch_size":18446744073709551615}]})"))
                .first,
            "models[0].batch_size");
}

TEST(ServerConfig, OnlyFourUriSchemes) {
  const std::vector<std::string> bad = {
      "videotestsrc ! fakesink",
      "file://relative/clip.mkv",
      "file:///x.mkv ! fakesink",
      "file:///clip\".mkv",
      "file:///a%zz",
      "file:///a%00b",
      "http://host/x",
      "v4l2:///dev/sda",
      "v4l2:///dev/video",
      "v4l2:///dev/video0; rm",
      "rtsp://",
      "rtsp:///path",
      "rtsps://host/x",
      "aravis://",
      "aravis://a/b",
      "gige://cam",
      "",
  };
  for (const auto& uri : bad) {
    auto [field, msg] = stream_error({{"id", "a"}, {"uri", uri}});
    EXPECT_EQ(field, "streams[0].uri") << uri << " " << msg;
  }
  auto [field, msg] = stream_error({{"id", "a"}, {"uri", "videotestsrc"}});
  EXPECT_NE(msg.find("must start with file://, v4l2://, rtsp:// or aravis://"), std::string::npos)
      << msg;
}

TEST(ServerConfig, RestBodyFieldsHaveNoPrefix) {
  const std::vector<ModelSpec> models = {{"parts", "m.pt"}};
  try {
    parse_stream_spec({{"id", "a"}, {"uri", "file:///x"}, {"extra", true}}, models, {}, "", "");
    FAIL() << "accepted an unknown field";
  } catch (const torchinfer::FieldError& e) {
    EXPECT_EQ(e.field(), "extra");
    EXPECT_EQ(std::string(e.what()).rfind("extra: unknown field", 0), 0u) << e.what();
  }
}

TEST(ServerConfig, StreamIds) {
  EXPECT_TRUE(valid_stream_id("cam-0_A"));
  EXPECT_FALSE(valid_stream_id(""));
  EXPECT_FALSE(valid_stream_id("../x"));
  EXPECT_FALSE(valid_stream_id("a/b"));
  EXPECT_FALSE(valid_stream_id("é"));
}
