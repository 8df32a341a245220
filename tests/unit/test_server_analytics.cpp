// torchinfer-server's lines and zones (pipelines/server/core/stream_analytics.h): the
// stream fields and the PUT body in both forms through torchanalytics' one
// parser, the errors naming the field, the "track" rule, the counts' JSON and
// their Prometheus series.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/core/metrics_text.h"
#include "server/core/server_config.h"
#include "server/core/stream_analytics.h"

using nlohmann::json;
using namespace torchinfer;
using namespace torchinfer::server;

namespace {

const std::vector<ModelSpec> kModels = {{"parts", "models/demo/parts_detector.pt"}};

StreamSpec stream(json extra) {
  json j = {{"id", "cam0"}, {"uri", "file:///clip.mkv"}};
  j.update(extra);
  return parse_stream_spec(j, kModels, {}, "streams[0]", "server.json");
}

// The field path and message of what `f` throws.
template <class F>
std::pair<std::string, std::string> error_of(F f) {
  try {
    f();
  } catch (const FieldError& e) {
    return {e.field(), e.what()};
  }
  return {"(no error)", ""};
}

std::pair<std::string, std::string> body_error(const json& body) {
  return error_of([&] { parse_analytics_body(body); });
}

}  // namespace

// The property syntax and the JSON form give the same layout.
TEST(ServerAnalytics, StringAndJsonFormsAreOneLayout) {
  const StreamSpec a = stream({{"track", true},
                               {"lines", "gate:320,0,320,480;exit:0,400,640,400"},
                               {"zones", "bay:100,100,300,100,300,300"}});
  const StreamSpec b =
      stream({{"track", true},
              {"lines",
               {{{"name", "gate"}, {"points", {{320, 0}, {320, 480}}}},
                {{"name", "exit"}, {"points", {{0, 400}, {640, 400}}}}}},
              {"zones", {{{"name", "bay"}, {"points", {{100, 100}, {300, 100}, {300, 300}}}}}}});
  ASSERT_EQ(a.analytics.lines.size(), 2u);
  EXPECT_EQ(a.analytics.lines, b.analytics.lines);
  EXPECT_EQ(a.analytics.zones, b.analytics.zones);
  EXPECT_EQ(a.analytics.lines[0].p2, (Point2{320, 480}));
  EXPECT_EQ(a.analytics.zones[0].outline.size(), 3u);
}

// Class filters and holes (JSON only) survive the round trip through the
// stream's JSON (GET /streams/{id} "config") and the element's file.
TEST(ServerAnalytics, ClassesAndHolesRoundTrip) {
  const json lines = {
      {{"name", "gate"}, {"points", {{320, 0}, {320, 480}}}, {"classes", {"bracket", "washer"}}}};
  const json zones = {{{"name", "bay"},
                       {"points", {{0, 0}, {200, 0}, {200, 200}, {0, 200}}},
                       {"holes", {{{50, 50}, {100, 50}, {100, 100}}}},
                       {"classes", {"washer"}}}};
  const StreamSpec s = stream({{"track", true}, {"lines", lines}, {"zones", zones}});
  const json j = to_json(s);
  EXPECT_EQ(j["lines"], lines);
  EXPECT_EQ(j["zones"], zones);
  EXPECT_EQ(parse_stream_spec(j, kModels, {}, "", "").analytics.zones, s.analytics.zones);
  const json file = layout_json(s.analytics);
  EXPECT_EQ(file, json({{"normalized", false}, {"lines", lines}, {"zones", zones}}));
  EXPECT_EQ(parse_analytics_json(file, "f").lines, s.analytics.lines);
  // No lines, no zones: the stream's JSON has neither field.
  EXPECT_FALSE(to_json(stream({{"track", true}})).contains("lines"));
}

// They count tracked objects: refused without "track": true.
TEST(ServerAnalytics, LinesAndZonesNeedTracking) {
  auto [field, what] = error_of([] { stream({{"lines", "gate:320,0,320,480"}}); });
  EXPECT_EQ(field, "streams[0].lines");
  EXPECT_EQ(what,
            "server.json: streams[0].lines: lines and zones count tracked objects: set "
            "\"track\": true");
  std::tie(field, what) = error_of([] {
    stream({{"track", false}, {"zones", "z:0,0,10,0,10,10"}});
  });
  EXPECT_EQ(field, "streams[0].zones");
  // Empty ones ask for nothing.
  EXPECT_TRUE(stream({{"lines", ""}, {"zones", json::array()}}).analytics.lines.empty());
}

TEST(ServerAnalytics, BadLayoutsNameTheFieldAndEntry) {
  const std::vector<std::tuple<json, std::string, std::string>> cases = {
      {{{"lines", "gate:1,2,3"}},
       "lines",
       "lines: lines: entry 1 ('gate'): expected name:x1,y1,x2,y2, got 3 numbers"},
      {{{"lines", 7}},
       "lines",
       "lines: must be a string (\"name:x1,y1,...;...\") or an array of lines objects, not "
       "number"},
      {{{"zones", {{"name", "z"}}}},
       "zones",
       "zones: must be a string (\"name:x1,y1,...;...\") or an array of zones objects, not "
       "object"},
      {{{"lines", {{{"name", "g"}, {"points", {{0, 0}, {0, 0}}}}}}},
       "lines",
       "lines: lines[0].points: the two points are the same; a line needs two"},
      {{{"lines", {{{"name", "g"}, {"points", {{0, 0}, {9, 0}}}, {"colour", "red"}}}}},
       "lines",
       "lines: lines[0]: unknown field 'colour'"},
      {{{"zones", {{{"name", "z"}, {"points", {{0, 0}, {9, 0}}}}}}},
       "zones",
       "zones: zones[0].points: needs at least 3 points, got 2"},
      {{{"zones", "z:0,0,5,5,10,10"}},
       "zones",
       "zones: zones: entry 1 ('z'): the points enclose no area (all on one line)"},
      {{{"zones", {{{"name", "z"}, {"points", {{0, 0}, {9, 0}, {"a", 1}}}}}}},
       "zones",
       "zones: zones[0].points[2]: a point is [x, y] (two numbers)"},
      {{{"lines", "a:0,0,1,1;a:2,2,3,3"}}, "lines", "lines: lines: the name 'a' is used twice"},
      {{{"lines", "bad name:0,0,1,1"}},
       "lines",
       "lines: lines: entry 1: the name 'bad name' has a character other than letters, digits, "
       "'_', '-', '.'"},
      {{{"lines", ""}, {"gate", "x"}}, "gate", "gate: unknown field; the fields are lines, zones"},
      {json::array(), "(body)",
       "(body): must be a JSON object {\"lines\": ..., \"zones\": ...}, not array"},
  };
  for (const auto& [body, field, what] : cases) {
    const auto [f, w] = body_error(body);
    EXPECT_EQ(f, field) << body;
    EXPECT_EQ(w, what) << body;
  }
  // In a stream the field path is the stream's.
  const auto [f, w] = error_of([] { stream({{"track", true}, {"lines", "g:1"}}); });
  EXPECT_EQ(f, "streams[0].lines");
  EXPECT_EQ(w.rfind("server.json: streams[0].lines: lines: entry 1 ('g'): expected", 0), 0u) << w;
}

// The body is the whole layout: a kind left out is none.
TEST(ServerAnalytics, BodyReplacesTheWholeLayout) {
  const AnalyticsConfig c = parse_analytics_body({{"zones", "z:0,0,10,0,10,10"}});
  EXPECT_TRUE(c.lines.empty());
  ASSERT_EQ(c.zones.size(), 1u);
  const AnalyticsConfig none = parse_analytics_body(json::object());
  EXPECT_TRUE(none.lines.empty());
  EXPECT_TRUE(none.zones.empty());
}

TEST(ServerAnalytics, CountsHaveTheShapeOfTheFramesAnalytics) {
  LineCounts gate{"gate", {0, 12}, {{"bracket", {0, 7}}, {"washer", {0, 5}}}};
  ZoneCounts bay{"bay", 2, 9, 7};
  EXPECT_EQ(counts_json({gate}, {bay}),
            json::parse(R"({"lines": {"gate": {"forward": 0, "backward": 12, "by_class": {
                              "bracket": {"forward": 0, "backward": 7},
                              "washer": {"forward": 0, "backward": 5}}}},
                            "zones": {"bay": {"inside": 2, "entered": 9, "exited": 7}}})"));
  EXPECT_EQ(counts_json({}, {}), json::parse(R"({"lines": {}, "zones": {}})"));
}

TEST(ServerAnalytics, PrometheusSeriesPerLineDirectionClassAndZone) {
  MetricsSnapshot m;
  StreamFigures s;
  s.id = "cam0";
  s.model = "parts";
  s.state = "running";
  s.lines = {{"gate", {0, 12}, {{"bracket", {0, 7}}, {"washer", {1, 5}}}}};
  s.zones = {{"bay", 2, 9, 7}};
  m.streams.push_back(s);
  const std::string text = render_prometheus(m);
  const std::string l = "{stream=\"cam0\",model=\"parts\",line=\"gate\",direction=\"";
  for (const std::string& line : std::vector<std::string>{
           std::string("# TYPE torchinfer_line_crossings_total counter\n"),
           "torchinfer_line_crossings_total" + l + "forward\",class=\"bracket\"} 0\n",
           "torchinfer_line_crossings_total" + l + "backward\",class=\"bracket\"} 7\n",
           "torchinfer_line_crossings_total" + l + "forward\",class=\"washer\"} 1\n",
           "torchinfer_line_crossings_total" + l + "backward\",class=\"washer\"} 5\n",
           std::string("# TYPE torchinfer_zone_entries_total counter\n"),
           std::string(
               "torchinfer_zone_entries_total{stream=\"cam0\",model=\"parts\",zone=\"bay\"} 9\n"),
           std::string(
               "torchinfer_zone_exits_total{stream=\"cam0\",model=\"parts\",zone=\"bay\"} 7\n"),
           std::string("# TYPE torchinfer_zone_objects gauge\n"),
           std::string(
               "torchinfer_zone_objects{stream=\"cam0\",model=\"parts\",zone=\"bay\"} 2\n")})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  // A stream without analytics has no series, only the families.
  m.streams[0].lines.clear();
  m.streams[0].zones.clear();
  EXPECT_EQ(render_prometheus(m).find("torchinfer_zone_objects{"), std::string::npos);
}
