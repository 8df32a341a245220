// torchanalytics in the JSON line (torchmetaconvert, torchpublish) and in
// torchpublish's event filters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "export/event_filter.h"
#include "export/frame_record.h"

using namespace torchinfer;
using nlohmann::json;

namespace {

FrameRecord with_analytics() {
  FrameRecord r;
  r.width = 640;
  r.height = 480;
  DetectionRecord d;
  d.box.label = "part";
  d.object_id = 3;
  d.zones = std::vector<std::string>{"bay", "dock"};
  r.detections.push_back(d);
  DetectionRecord outside = d;
  outside.zones = std::vector<std::string>{};
  r.detections.push_back(outside);
  AnalyticsRecord a;
  LineCounts gate;
  gate.name = "gate";
  gate.total = {5, 2};
  gate.by_class["part"] = {4, 2};
  gate.by_class["bolt"] = {1, 0};
  a.lines.push_back(gate);
  a.zones.push_back({"bay", 1, 7, 6});
  AnalyticsEvent cross;
  cross.name = "gate";
  cross.forward = false;
  cross.track_id = 3;
  cross.label = "part";
  cross.label_id = 0;
  cross.pts_ns = 1000;
  AnalyticsEvent exit = cross;
  exit.type = AnalyticsEventType::kExited;
  exit.name = "bay";
  exit.dwell_ns = 500;
  exit.lost = true;
  a.events = {cross, exit};
  r.analytics = a;
  return r;
}

}  // namespace

TEST(AnalyticsJson, CountsEventsAndPerDetectionZones) {
  const json j = json::parse(to_json_line(with_analytics(), false, 0));
  const json& a = j.at("analytics");
  EXPECT_EQ(a["lines"]["gate"]["forward"], 5);
  EXPECT_EQ(a["lines"]["gate"]["backward"], 2);
  EXPECT_EQ(a["lines"]["gate"]["by_class"]["part"], json({{"forward", 4}, {"backward", 2}}));
  EXPECT_EQ(a["lines"]["gate"]["by_class"]["bolt"], json({{"forward", 1}, {"backward", 0}}));
  EXPECT_EQ(a["zones"]["bay"], json({{"inside", 1}, {"entered", 7}, {"exited", 6}}));
  ASSERT_EQ(a["events"].size(), 2u);
  EXPECT_EQ(a["events"][0], json::parse(R"({"event": "crossing", "line": "gate",
      "direction": "backward", "id": 3, "label": "part", "label_id": 0, "pts": 1000})"));
  EXPECT_EQ(a["events"][1], json::parse(R"({"event": "zone-exited", "zone": "bay", "id": 3,
      "label": "part", "label_id": 0, "pts": 1000, "dwell_ns": 500, "reason": "lost"})"));
  EXPECT_EQ(j["detections"][0]["zones"], json({"bay", "dock"}));
  EXPECT_EQ(j["detections"][1]["zones"], json::array());
}

TEST(AnalyticsJson, LinesWithoutAnalyticsAreUnchanged) {
  FrameRecord r = with_analytics();
  r.analytics.reset();
  for (auto& d : r.detections) d.zones.reset();
  const json j = json::parse(to_json_line(r, false, 0));
  EXPECT_FALSE(j.contains("analytics"));
  EXPECT_FALSE(j["detections"][0].contains("zones"));
  // Counts without events: no "events" key.
  r.analytics = AnalyticsRecord{};
  EXPECT_FALSE(json::parse(to_json_line(r, false, 0))["analytics"].contains("events"));
  EXPECT_EQ(json::parse(to_json_line(r, false, 0))["analytics"],
            json::parse(R"({"lines": {}, "zones": {}})"));
}

TEST(AnalyticsJson, AnalyticsEventsAreEventsEvenOnReusedResults) {
  FrameRecord r;
  r.has_inference = true;
  r.inferred = false;
  r.analytics = AnalyticsRecord{};
  EventFilter f;
  EXPECT_FALSE(f.is_event(r));
  EXPECT_FALSE(EventFilter::is_change(r));
  AnalyticsEvent e;
  e.name = "gate";
  r.analytics->events.push_back(e);
  EXPECT_TRUE(f.is_event(r));
  EXPECT_TRUE(EventFilter::is_change(r));
  // mode=events ignores detections and classes alone.
  FrameRecord d;
  d.detections.emplace_back();
  d.classification.push_back({1, "x", 0.9});
  EXPECT_TRUE(f.is_event(d));
  EXPECT_FALSE(EventFilter::is_change(d));
  d.track_events.emplace_back();
  EXPECT_TRUE(EventFilter::is_change(d));
}
