// src/analytics: the lines/zones syntax (property strings and JSON file) and
// counting over scripted trajectories.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "common/error.h"

using namespace torchinfer;

namespace {

constexpr std::int64_t kMs = 1000000;

// A 20x20 box whose bottom-centre is (x, y).
AnalyticsObject at(int id, double x, double y, const std::string& label = "part") {
  AnalyticsObject o;
  o.track_id = id;
  o.label = label;
  o.x_min = x - 10;
  o.x_max = x + 10;
  o.y_min = y - 20;
  o.y_max = y;
  return o;
}

AnalyticsConfig gate() {  // vertical, pointing up: left-to-right motion is forward
  AnalyticsConfig c;
  c.lines = parse_lines("gate:320,480,320,0");
  return c;
}

// Runs one track along xs (bottom-centre y fixed), returns all events.
std::vector<AnalyticsEvent> run(StreamAnalytics& a, int id, const std::vector<double>& xs,
                                double y = 240, std::int64_t* frame = nullptr) {
  std::vector<AnalyticsEvent> all;
  std::int64_t local = 0;
  std::int64_t& f = frame ? *frame : local;
  for (double x : xs) {
    auto step = a.update({at(id, x, y)}, 33 * kMs * f++);
    all.insert(all.end(), step.events.begin(), step.events.end());
  }
  return all;
}

void expect_config_error(const std::string& text, bool zones, const std::string& part) {
  try {
    zones ? (void)parse_zones(text) : (void)parse_lines(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "'" << text << "': " << e.what();
  }
}

}  // namespace

TEST(AnalyticsSyntax, LinesAndZonesParse) {
  const auto lines = parse_lines(" gate:320,480,320,0 ; exit.2:0,400.5,640,-1; ");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].name, "gate");
  EXPECT_EQ(lines[0].p1, (Point2{320, 480}));
  EXPECT_EQ(lines[0].p2, (Point2{320, 0}));
  EXPECT_EQ(lines[1].name, "exit.2");
  EXPECT_EQ(lines[1].p1, (Point2{0, 400.5}));
  EXPECT_EQ(lines[1].p2, (Point2{640, -1}));
  const auto zones = parse_zones("bay:0,0,10,0,10,10;L_shape:0,0,20,0,20,10,10,10,10,20,0,20");
  ASSERT_EQ(zones.size(), 2u);
  EXPECT_EQ(zones[0].outline.size(), 3u);
  EXPECT_EQ(zones[1].outline.size(), 6u);
  EXPECT_EQ(zones[1].outline[3], (Point2{10, 10}));
  EXPECT_TRUE(parse_lines("").empty());
  EXPECT_TRUE(parse_zones("  ").empty());
}

TEST(AnalyticsSyntax, EveryLineSyntaxErrorIsNamed) {
  expect_config_error("gate320,480,320,0", false, "lines: entry 1: expected name:x1,y1,x2,y2");
  expect_config_error(":1,2,3,4", false, "the name is empty");
  expect_config_error("ga te:1,2,3,4", false, "character other than");
  expect_config_error(std::string(65, 'a') + ":1,2,3,4", false, "longer than 64");
  expect_config_error("a:1,2,3,4;b:1,2,3", false,
                      "entry 2 ('b'): expected name:x1,y1,x2,y2, got 3");
  expect_config_error("a:1,2,3,4,5", false, "got 5 numbers");
  expect_config_error("a:1,2,x,4", false, "'x' is not a number");
  expect_config_error("a:1,2,,4", false, "'' is not a number");
  expect_config_error("a:1,2,3,nan", false, "'nan' is not a number");
  expect_config_error("a:1,2,3,inf", false, "'inf' is not a number");
  expect_config_error("a:1,2,3,1e999", false, "'1e999' is not a number");
  expect_config_error("a:1,2,3,4 5", false, "'4 5' is not a number");
  expect_config_error("a:1,2,1,2", false, "the two points are the same");
  expect_config_error("a:1,2,3,4;;b:1,2,3,4", false, "entry 2 is empty");
  expect_config_error("a:1,2,3,4;a:5,6,7,8", false, "the name 'a' is used twice");
  std::string many;
  for (int i = 0; i < 65; ++i) many += "l" + std::to_string(i) + ":0,0,1,1;";
  expect_config_error(many, false, "more than 64 entries");
}

TEST(AnalyticsSyntax, EveryZoneSyntaxErrorIsNamed) {
  expect_config_error("z:0,0,1,0", true, "zones: entry 1 ('z'): needs at least 3 points, got 2");
  expect_config_error("z:0,0,1,0,1", true, "odd count of numbers (5)");
  expect_config_error("z:0,0,1,1,2,2", true, "enclose no area");
  expect_config_error("z:0,0,1,0,1,q", true, "'q' is not a number");
  expect_config_error("z 0,0,1,0,1,1", true, "expected name:x1,y1,x2,y2,x3,y3");
  expect_config_error("z:0,0,1,0,1,1;z:0,0,1,0,1,1", true, "the name 'z' is used twice");
  std::string big = "z:";
  for (int i = 0; i < 257; ++i) big += std::to_string(i) + "," + std::to_string(i * i % 7) + ",";
  big.pop_back();
  expect_config_error(big, true, "more than 256 points");
}

TEST(AnalyticsSyntax, JsonFileWithHolesAndClasses) {
  const auto j = nlohmann::json::parse(R"({"normalized": true,
    "lines": [{"name": "gate", "points": [[0.5, 1], [0.5, 0]], "classes": ["part"]}],
    "zones": [{"name": "ring", "points": [[0,0],[1,0],[1,1],[0,1]],
               "holes": [[[0.25,0.25],[0.75,0.25],[0.75,0.75],[0.25,0.75]]]}]})");
  const AnalyticsConfig c = parse_analytics_json(j, "cfg.json");
  EXPECT_TRUE(c.normalized);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0].classes, std::vector<std::string>{"part"});
  ASSERT_EQ(c.zones.size(), 1u);
  ASSERT_EQ(c.zones[0].holes.size(), 1u);
  const AnalyticsConfig px = to_pixels(c, 640, 480);
  EXPECT_FALSE(px.normalized);
  EXPECT_EQ(px.lines[0].p1, (Point2{320, 480}));
  EXPECT_EQ(px.zones[0].holes[0][2], (Point2{480, 360}));
}

TEST(AnalyticsSyntax, JsonErrorsNameFileAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([])", "cfg.json: expected an object"},
      {R"({"line": []})", "cfg.json: unknown field 'line'"},
      {R"({"normalized": 1})", "normalized: expected true or false"},
      {R"({"lines": {}})", "cfg.json: lines: expected an array"},
      {R"({"lines": [{"points": [[0,0],[1,1]]}]})", "lines[0].name: missing"},
      {R"({"lines": [{"name": "a"}]})", "lines[0].points: missing"},
      {R"({"lines": [{"name": "a", "points": [[0,0]]}]})", "lines[0].points: a line has exactly 2"},
      {R"({"lines": [{"name": "a", "points": [[0,0],[0,"1"]]}]})",
       "lines[0].points[1]: a point is"},
      {R"({"lines": [{"name": "a", "points": [[0,0],[1,1]], "classes": "part"}]})",
       "lines[0].classes: expected an array"},
      {R"({"lines": [{"name": "a", "points": [[0,0],[1,1]], "classes": [""]}]})",
       "lines[0].classes: every entry"},
      {R"({"lines": [{"name": "a", "points": [[0,0],[1,1]], "colour": 1}]})",
       "lines[0]: unknown field 'colour'"},
      {R"({"zones": [{"name": "z", "points": [[0,0],[1,0],[1,1]], "holes": [[[0,0],[1,1]]]}]})",
       "zones[0].holes[0]: needs at least 3 points"},
      {R"({"zones": [{"name": "z", "points": [[0,0],[1,0],[1,1]]},
                     {"name": "z", "points": [[0,0],[1,0],[1,1]]}]})",
       "cfg.json: zones: the name 'z' is used twice"},
  };
  for (const auto& [text, part] : cases) {
    try {
      parse_analytics_json(nlohmann::json::parse(text), "cfg.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(AnalyticsSyntax, HostileConfigFiles) {
  char dir[] = "/tmp/analytics-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  const std::string d = dir;
  EXPECT_THROW(read_analytics_file(d + "/missing.json"), Error);
  EXPECT_THROW(read_analytics_file(d), Error);  // a directory
  const std::string fifo = d + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_analytics_file(fifo);  // never blocks
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  const std::string big = d + "/big.json";
  std::ofstream(big) << std::string((1u << 20) + 1, ' ');
  try {
    read_analytics_file(big);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
  }
  const std::string bad = d + "/bad.json";
  std::ofstream(bad) << R"({"lines": [{"name": "a", "points": [[0,0],[0,0]]}]})";
  try {
    read_analytics_file(bad);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ": lines[0].points: the two points are the same"),
              std::string::npos)
        << e.what();
  }
  for (const char* f : {"/fifo.json", "/big.json", "/bad.json"}) unlink((d + f).c_str());
  rmdir(dir);
}

TEST(AnalyticsLines, ForwardIsLeftToRightOfP1P2) {
  StreamAnalytics a(gate(), {});
  const auto ev = run(a, 1, {300, 310, 318, 322, 330, 340});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, AnalyticsEventType::kCrossing);
  EXPECT_EQ(ev[0].name, "gate");
  EXPECT_TRUE(ev[0].forward);
  EXPECT_EQ(ev[0].track_id, 1);
  EXPECT_EQ(ev[0].pts_ns, 33 * kMs * 4);  // first frame >= 4 px past the line (330)
  const auto c = a.line_counts();
  EXPECT_EQ(c[0].total, (DirectionCounts{1, 0}));
  EXPECT_EQ(c[0].by_class.at("part"), (DirectionCounts{1, 0}));
  // The other way is backward.
  const auto back = run(a, 2, {340, 330, 310, 300});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].forward);
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{1, 1}));
}

TEST(AnalyticsLines, HorizontalLineDownwardMotionIsForward) {
  AnalyticsConfig c;
  c.lines = parse_lines("belt:0,400,640,400");  // pointing right: below is its right
  StreamAnalytics a(c, {});
  std::vector<AnalyticsEvent> ev;
  for (int f = 0; f < 6; ++f) {
    auto s = a.update({at(1, 100, 380 + 8 * f)}, f);
    ev.insert(ev.end(), s.events.begin(), s.events.end());
  }
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].forward);
}

TEST(AnalyticsLines, JitterOnTheLineCountsOnce) {
  StreamAnalytics a(gate(), {});
  // Crosses while wobbling +-3 px around the line (inside the 4 px band):
  // one forward, nothing backward.
  auto ev = run(a, 1, {300, 321, 317, 323, 319, 322, 318, 330, 340});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].forward);
  EXPECT_EQ(ev[0].pts_ns, 33 * kMs * 7);
  // Firmly back and forth again: one backward, and no second forward.
  std::int64_t f = 9;
  ev = run(a, 1, {316, 329, 310, 335}, 240, &f);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].forward);
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{1, 1}));
  // Without hysteresis the same wobble is a crossing each way.
  StreamAnalytics raw(gate(), {0, 30, ReferencePoint::kBottomCenter});
  run(raw, 1, {300, 321, 317, 323, 319});
  EXPECT_EQ(raw.line_counts()[0].total, (DirectionCounts{1, 1}));
}

TEST(AnalyticsLines, LostAndRefoundWithinMaxAgeDoesNotCountAgain) {
  StreamAnalytics a(gate(), {4, 5, ReferencePoint::kBottomCenter});
  std::int64_t f = 0;
  run(a, 7, {300, 310, 330}, 240, &f);
  for (int i = 0; i < 5; ++i) a.update({}, f++);  // unseen 5 frames: kept
  EXPECT_EQ(a.tracks(), 1u);
  const auto again = run(a, 7, {310, 340}, 240, &f);  // re-found left of the line, crosses again
  EXPECT_EQ(again.size(), 1u);                        // the backward move
  EXPECT_FALSE(again.at(0).forward);
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{1, 1}));
  for (int i = 0; i < 6; ++i) a.update({}, f++);  // past max-age: dropped
  EXPECT_EQ(a.tracks(), 0u);
  const auto fresh = run(a, 7, {300, 340}, 240, &f);  // a new life of id 7 counts
  EXPECT_EQ(fresh.size(), 1u);
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{2, 1}));
}

TEST(AnalyticsLines, GoingRoundTheEndDoesNotCount) {
  AnalyticsConfig c;
  c.lines = parse_lines("short:320,300,320,200");
  StreamAnalytics a(c, {});
  EXPECT_TRUE(run(a, 1, {300, 340}, 350).empty());   // below P1
  EXPECT_EQ(run(a, 2, {300, 340}, 300).size(), 1u);  // through P1 itself
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{1, 0}));
}

TEST(AnalyticsLines, ReferencePointDecides) {
  AnalyticsConfig c;
  c.lines = parse_lines("belt:0,100,640,100");
  // The box spans y 80..100 then 85..105: bottom-centre crosses, top does not.
  StreamAnalytics bottom(c, {1, 30, ReferencePoint::kBottomCenter});
  StreamAnalytics top(c, {1, 30, ReferencePoint::kTopCenter});
  for (StreamAnalytics* a : {&bottom, &top})
    for (double y : {95.0, 98.0, 103.0, 110.0}) a->update({at(1, 50, y)}, 0);
  EXPECT_EQ(bottom.line_counts()[0].total.forward, 1u);
  EXPECT_EQ(top.line_counts()[0].total.forward, 0u);
}

TEST(AnalyticsLines, ClassFilterAndByClass) {
  AnalyticsConfig c = gate();
  c.lines.push_back(parse_lines("bolts:320,480,320,0")[0]);
  c.lines[1].classes = {"bolt"};
  StreamAnalytics a(c, {});
  for (double x : {300.0, 340.0}) a.update({at(1, x, 240, "bolt"), at(2, x, 300, "nut")}, 0);
  const auto counts = a.line_counts();
  EXPECT_EQ(counts[0].total, (DirectionCounts{2, 0}));
  EXPECT_EQ(counts[0].by_class.at("bolt"), (DirectionCounts{1, 0}));
  EXPECT_EQ(counts[0].by_class.at("nut"), (DirectionCounts{1, 0}));
  EXPECT_EQ(counts[1].total, (DirectionCounts{1, 0}));
  EXPECT_EQ(counts[1].by_class.count("nut"), 0u);
}

TEST(AnalyticsLines, UntrackedObjectsAreNeverCounted) {
  StreamAnalytics a(gate(), {});
  for (double x : {300.0, 340.0}) {
    AnalyticsObject o = at(0, x, 240);
    o.track_id.reset();
    EXPECT_TRUE(a.update({o}, 0).events.empty());
  }
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{0, 0}));
  EXPECT_EQ(a.tracks(), 0u);
}

TEST(AnalyticsLines, ChangedLineStartsFromZeroUnchangedKeepsCounts) {
  AnalyticsConfig c = gate();
  c.lines.push_back(parse_lines("other:100,480,100,0")[0]);
  StreamAnalytics a(c, {});
  run(a, 1, {80, 120, 300, 340});
  EXPECT_EQ(a.line_counts()[0].total.forward, 1u);
  EXPECT_EQ(a.line_counts()[1].total.forward, 1u);
  AnalyticsConfig moved = gate();
  moved.lines.push_back(parse_lines("other:200,480,200,0")[0]);
  a.set_config(moved);
  EXPECT_EQ(a.line_counts()[0].total.forward, 1u);  // same name and geometry: kept
  EXPECT_EQ(a.line_counts()[1].total.forward, 0u);  // moved: from zero
  // Track 1 is right of both now: its state on the kept gate survives (no
  // recount going back and forth), the moved line sees it anew.
  run(a, 1, {310, 340, 180, 240});
  EXPECT_EQ(a.line_counts()[0].total, (DirectionCounts{1, 1}));
  EXPECT_EQ(a.line_counts()[1].total, (DirectionCounts{1, 1}));
  a.set_config({});
  EXPECT_TRUE(a.line_counts().empty());
}

TEST(AnalyticsZones, ConcaveZoneEnterExitDwell) {
  AnalyticsConfig c;
  // An L: the notch (x 100..200, y 100..200) is outside.
  c.zones = parse_zones("L:0,0,200,0,200,100,100,100,100,200,0,200");
  StreamAnalytics a(c, {0, 30, ReferencePoint::kBottomCenter});
  auto s = a.update({at(1, 50, 150)}, 0);  // in the L's leg
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].type, AnalyticsEventType::kEntered);
  EXPECT_EQ(s.zones[0], std::vector<std::string>{"L"});
  EXPECT_EQ(a.zone_counts()[0].inside, 1u);
  s = a.update({at(1, 150, 150)}, 100 * kMs);  // in the notch: outside (a convex hull would say in)
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].type, AnalyticsEventType::kExited);
  EXPECT_EQ(s.events[0].dwell_ns, 100 * kMs);
  EXPECT_FALSE(s.events[0].lost);
  EXPECT_TRUE(s.zones[0].empty());
  const ZoneCounts z = a.zone_counts()[0];
  EXPECT_EQ(z.inside, 0u);
  EXPECT_EQ(z.entered, 1u);
  EXPECT_EQ(z.exited, 1u);
}

TEST(AnalyticsZones, BorderIsInsideAndLeavingNeedsHysteresis) {
  AnalyticsConfig c;
  c.zones = parse_zones("sq:100,100,200,100,200,200,100,200");
  StreamAnalytics a(c, {4, 30, ReferencePoint::kBottomCenter});
  EXPECT_EQ(a.update({at(1, 150, 200)}, 0).zones[0],
            std::vector<std::string>{"sq"});                      // on the edge
  EXPECT_EQ(a.update({at(1, 150, 203)}, 0).zones[0].size(), 1u);  // 3 px out: still in
  EXPECT_EQ(a.update({at(1, 150, 199)}, 0).events.size(), 0u);
  const auto s = a.update({at(1, 150, 204)}, 0);  // 4 px out: left
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].type, AnalyticsEventType::kExited);
  EXPECT_EQ(a.zone_counts()[0].entered, 1u);
  // A corner point is on the border too.
  EXPECT_EQ(a.update({at(2, 100, 100)}, 0).zones[0], std::vector<std::string>{"sq"});
}

TEST(AnalyticsZones, HolesAreOutside) {
  const auto j = nlohmann::json::parse(R"({"zones": [{"name": "ring",
      "points": [[0,0],[300,0],[300,300],[0,300]],
      "holes": [[[100,100],[200,100],[200,200],[100,200]]]}]})");
  StreamAnalytics a(parse_analytics_json(j, "t"), {0, 30, ReferencePoint::kCenter});
  AnalyticsObject in_ring = at(1, 50, 60), in_hole = at(2, 150, 160),
                  on_hole_edge = at(3, 100, 160);
  const auto s = a.update({in_ring, in_hole, on_hole_edge}, 0);
  EXPECT_EQ(s.zones[0], std::vector<std::string>{"ring"});
  EXPECT_TRUE(s.zones[1].empty());
  EXPECT_EQ(s.zones[2], std::vector<std::string>{"ring"});  // the hole's edge belongs to the zone
  EXPECT_EQ(a.zone_counts()[0].inside, 2u);
}

TEST(AnalyticsZones, LostTrackExitsWithDwellToItsLastSighting) {
  AnalyticsConfig c;
  c.zones = parse_zones("sq:0,0,100,0,100,100,0,100");
  StreamAnalytics a(c, {0, 2, ReferencePoint::kCenter});
  a.update({at(4, 50, 60)}, 0);
  a.update({at(4, 50, 60)}, 40 * kMs);
  a.update({}, 80 * kMs);
  EXPECT_EQ(a.update({}, 120 * kMs).events.size(), 0u);  // unseen 2 frames: kept, still inside
  EXPECT_EQ(a.zone_counts()[0].inside, 1u);
  const auto s = a.update({}, 160 * kMs);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_TRUE(s.events[0].lost);
  EXPECT_EQ(s.events[0].dwell_ns, 40 * kMs);
  EXPECT_EQ(s.events[0].pts_ns, 40 * kMs);
  EXPECT_EQ(a.zone_counts()[0].inside, 0u);
  EXPECT_EQ(a.zone_counts()[0].exited, 1u);
}

TEST(AnalyticsZones, ClassFilter) {
  AnalyticsConfig c;
  c.zones = parse_zones("sq:0,0,100,0,100,100,0,100");
  c.zones[0].classes = {"nut"};
  StreamAnalytics a(c, {});
  const auto s = a.update({at(1, 50, 50, "bolt"), at(2, 50, 50, "nut")}, 0);
  EXPECT_TRUE(s.zones[0].empty());
  EXPECT_EQ(s.zones[1], std::vector<std::string>{"sq"});
  EXPECT_EQ(a.zone_counts()[0].entered, 1u);
}

TEST(AnalyticsOptionsCheck, BadOptionsThrow) {
  EXPECT_THROW(StreamAnalytics({}, {-1, 30, ReferencePoint::kCenter}), Error);
  EXPECT_THROW(StreamAnalytics({}, {NAN, 30, ReferencePoint::kCenter}), Error);
  EXPECT_THROW(StreamAnalytics({}, {1, -1, ReferencePoint::kCenter}), Error);
  AnalyticsConfig norm;
  norm.normalized = true;
  EXPECT_THROW(StreamAnalytics(norm, {}), Error);
  EXPECT_EQ(reference_point_from_string("top-center"), ReferencePoint::kTopCenter);
  EXPECT_FALSE(reference_point_from_string("top"));
}
