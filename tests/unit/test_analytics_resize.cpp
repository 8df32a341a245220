// src/analytics: the property form's class filter (parse_classes), zones
// whose outline crosses itself, and counts kept across a frame-size change
// when the normalised lines are the same (StreamAnalytics::resize).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "common/error.h"

using namespace torchinfer;

namespace {

// A 20x20 box whose centre is (x, y).
AnalyticsObject centred(int id, double x, double y) {
  AnalyticsObject o;
  o.track_id = id;
  o.label = "part";
  o.x_min = x - 10;
  o.x_max = x + 10;
  o.y_min = y - 10;
  o.y_max = y + 10;
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    return e.what();
  }
  return "(accepted)";
}

// The normalised gate x = 0.5 (bottom-up: left to right is forward) in a
// w x h frame.
AnalyticsConfig gate_in(int w, int h) {
  AnalyticsConfig c;
  c.lines = parse_lines("gate:0.5,1,0.5,0");
  c.normalized = true;
  return to_pixels(c, w, h);
}

}  // namespace

TEST(AnalyticsClasses, ParseTrimsAndKeepsOrder) {
  EXPECT_EQ(parse_classes(""), std::vector<std::string>{});
  EXPECT_EQ(parse_classes("  "), std::vector<std::string>{});
  EXPECT_EQ(parse_classes("bracket"), std::vector<std::string>{"bracket"});
  EXPECT_EQ(parse_classes(" washer , bracket"), (std::vector<std::string>{"washer", "bracket"}));
}

TEST(AnalyticsClasses, BadListsAreRefusedNamingTheLabel) {
  EXPECT_EQ(error_of([] { parse_classes("bracket,,washer"); }),
            "classes: label 2 is empty (two ',' in a row, or one at an end)");
  EXPECT_EQ(error_of([] { parse_classes("bracket,"); }),
            "classes: label 2 is empty (two ',' in a row, or one at an end)");
  EXPECT_EQ(error_of([] { parse_classes("a,b,a"); }), "classes: label 3: 'a' is given twice");
  EXPECT_EQ(error_of([] { parse_classes(std::string(65, 'x')); }),
            "classes: label 1 is longer than 64 characters");
  std::string many;
  for (int i = 0; i < 65; ++i) many += "c" + std::to_string(i) + ",";
  many.pop_back();
  EXPECT_EQ(error_of([&] { parse_classes(many); }), "classes: more than 64 labels");
}

// A bow-tie's area is zero too, but its points are not on one line: the
// message says what is wrong and which edges cross.
TEST(AnalyticsZoneOutline, ABowTieIsRefusedAsCrossingItself) {
  EXPECT_EQ(error_of([] { parse_zones("bow:0,0,100,100,100,0,0,100"); }),
            "zones: entry 1 ('bow'): the outline crosses itself (edge point 1->2 meets edge "
            "point 3->4); give the points in order around the zone");
  // An uneven bow-tie (area not zero) as well, and in the JSON form.
  EXPECT_NE(error_of([] { parse_zones("bow:0,0,300,100,300,0,0,100"); }).find("crosses itself"),
            std::string::npos);
  const auto j = nlohmann::json::parse(
      R"({"zones": [{"name": "b", "points": [[0,0],[10,10],[10,0],[0,10]]}]})");
  EXPECT_EQ(error_of([&] { parse_analytics_json(j, "/etc/a.json"); }),
            "/etc/a.json: zones[0].points: the outline crosses itself (edge point 1->2 meets "
            "edge point 3->4); give the points in order around the zone");
  // Points on one line keep their own message; a concave outline is fine.
  EXPECT_EQ(error_of([] { parse_zones("z:0,0,1,1,2,2"); }),
            "zones: entry 1 ('z'): the points enclose no area (all on one line)");
  EXPECT_EQ(parse_zones("u:0,0,30,0,30,30,20,30,20,10,10,10,10,30,0,30").size(), 1u);
}

// Three parts cross the normalised gate, the frame changes size between
// them (and in the middle of the second one's crossing): 3 forward.
TEST(AnalyticsResize, NormalisedGateKeepsCountsAndSidesAcrossASizeChange) {
  StreamAnalytics a(gate_in(640, 480), AnalyticsOptions{});
  for (double x : {200.0, 300.0, 340.0, 440.0}) a.update({centred(1, x, 240)}, -1);
  EXPECT_EQ(a.line_counts()[0].total.forward, 1u);
  // Part 2 is left of the gate when the frame becomes 320x240 (x 0.47)...
  a.update({centred(2, 300, 240)}, -1);
  a.resize(gate_in(320, 240), 0.5, 0.5);
  EXPECT_EQ(a.line_counts()[0].total.forward, 1u);
  a.update({centred(2, 170, 120)}, -1);  // ... and crosses in the new pixels
  a.update({centred(2, 220, 120)}, -1);
  EXPECT_EQ(a.line_counts()[0].total.forward, 2u);
  a.resize(gate_in(1280, 960), 4, 4);
  for (double x : {400.0, 600.0, 700.0, 900.0}) a.update({centred(3, x, 480)}, -1);
  const LineCounts c = a.line_counts()[0];
  EXPECT_EQ(c.total.forward, 3u);
  EXPECT_EQ(c.total.backward, 0u);
  EXPECT_EQ(a.tracks(), 3u);
}

// A line given in pixels stays where it is in pixels: it keeps its counts
// too; one that moved in the user's coordinates starts from zero.
TEST(AnalyticsResize, PixelLinesKeepAndMovedLinesRestart) {
  AnalyticsConfig both = gate_in(640, 480);
  both.lines.push_back(parse_lines("px:100,480,100,0")[0]);
  StreamAnalytics a(both, AnalyticsOptions{});
  for (double x : {50.0, 150.0, 300.0, 340.0}) a.update({centred(1, x, 240)}, -1);
  EXPECT_EQ(a.line_counts()[0].total.forward, 1u);
  EXPECT_EQ(a.line_counts()[1].total.forward, 1u);
  AnalyticsConfig moved;
  moved.lines = parse_lines("gate:0.25,1,0.25,0");
  moved.normalized = true;
  moved = to_pixels(moved, 320, 240);
  moved.lines.push_back(both.lines[1]);
  a.resize(moved, 0.5, 0.5);
  EXPECT_EQ(a.line_counts()[0].total.forward, 0u);  // moved: from zero
  EXPECT_EQ(a.line_counts()[1].total.forward, 1u);  // same pixels: kept
}

TEST(AnalyticsResize, BadScalesThrow) {
  StreamAnalytics a(gate_in(640, 480), AnalyticsOptions{});
  EXPECT_THROW(a.resize(gate_in(640, 480), 0, 1), Error);
  EXPECT_THROW(a.resize(gate_in(640, 480), 1, -2), Error);
}
