// What torchanalytics counts: tripwires (lines) and zones (polygons), from
// the element's `lines`/`zones` property strings or a JSON config file. Plain
// data and parsing; the counting is analytics.h.
//
// Property syntax (coordinates in frame pixels, or 0..1 with `normalized`):
//   lines = "gate:320,480,320,0;exit:0,400,640,400"      name:x1,y1,x2,y2[;...]
//   zones = "bay:100,100,300,100,300,300,100,300;..."    name:x1,y1,x2,y2,x3,y3[,...][;...]
//   classes = "bracket,washer"   labels those lines and zones count (empty: every label)
// JSON file (the same content plus class filters and zone holes):
//   {"normalized": false,
//    "lines": [{"name": "gate", "points": [[320,480],[320,0]], "classes": ["part"]}],
//    "zones": [{"name": "bay", "points": [[100,100],[300,100],[300,300]],
//               "holes": [[[150,150],[200,150],[200,200]]], "classes": []}]}
// Names: 1-64 characters of letters, digits, '_', '-', '.', unique among
// the lines and among the zones.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace torchinfer {

struct Point2 {
  double x = 0, y = 0;
  bool operator==(const Point2& o) const { return x == o.x && y == o.y; }
};

using Polygon = std::vector<Point2>;

struct Tripwire {
  std::string name;
  Point2 p1, p2;
  std::vector<std::string> classes;  // labels counted; empty = every label
  bool operator==(const Tripwire& o) const {
    return name == o.name && p1 == o.p1 && p2 == o.p2 && classes == o.classes;
  }
};

struct Zone {
  std::string name;
  Polygon outline;  // >= 3 points, concave allowed
  std::vector<Polygon> holes;
  std::vector<std::string> classes;  // empty = every label
  bool operator==(const Zone& o) const {
    return name == o.name && outline == o.outline && holes == o.holes && classes == o.classes;
  }
};

struct AnalyticsConfig {
  std::vector<Tripwire> lines;
  std::vector<Zone> zones;
  bool normalized = false;  // coordinates are 0..1 of the frame
};

// Each throws Error(kConfigInvalid) naming the entry and what is wrong, e.g.
// "lines: entry 2 ('exit'): expected name:x1,y1,x2,y2, got 3 numbers".
std::vector<Tripwire> parse_lines(const std::string& text);
std::vector<Zone> parse_zones(const std::string& text);
// A class filter "bracket,washer" (torchanalytics' `classes`): labels
// without surrounding blanks, at most 64, each at most 64 characters, none
// twice; "" is no filter (every label).
std::vector<std::string> parse_classes(const std::string& text);
// `origin` (the file's path) prefixes every error, with the field:
// "/etc/a.json: zones[1].points: needs at least 3 points".
AnalyticsConfig parse_analytics_json(const nlohmann::json& j, const std::string& origin);
// A regular file of at most 1 MiB (common/json_file.h rules).
AnalyticsConfig read_analytics_file(const std::string& path);

// Normalised coordinates scaled to a frame (pixels pass unchanged); the
// result has normalized = false.
AnalyticsConfig to_pixels(const AnalyticsConfig& c, int width, int height);

}  // namespace torchinfer
