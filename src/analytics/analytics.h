// Line crossings and zone occupancy of tracked objects, for one stream
// (torchanalytics keeps one per stream-id). Deterministic; no GStreamer.
//
// Direction. Image coordinates, y down. Standing on P1 and looking towards
// P2, `forward` is a crossing from the left-hand side to the right-hand side,
// `backward` the other way. The side is the sign of the cross product
// (P2 - P1) x (p - P1): > 0 is the right. Examples:
//
//        P2 (320,0)                    P1 (0,400) ------------> P2 (640,400)
//        ^                                    left (above) | objects moving
//   left | right     objects moving           right(below) v down: forward
//   -->  |  -->      right: forward
//        P1 (320,480)
//
// Hysteresis. An object's side of a line is only decided when its reference
// point is at least `hysteresis` px from the (infinite) line; inside that
// band the side stays what it was. A crossing is a change of decided side
// whose path (from the last point firmly on the old side to the first
// firmly on the new one) cuts the segment P1-P2 (going round an end does not
// count). So jitter on the line never counts; a track counts at most once
// per line and direction (a part pushed back across counts one `backward`,
// and its going forward again nothing).
//
// Tracks. Objects are told apart by their track id (torchtrack's object_id);
// an object without one is placed in zones (zones_of) but never counted. A
// track's state lives until it has gone unseen for `max_age` frames, so a
// track lost and re-found with the same id within that time does not count
// again; when it is dropped it exits its zones.
//
// Zones. An object is inside when its reference point is inside the outline
// and in no hole; the border belongs to the zone (cv::pointPolygonTest
// distance >= 0). It leaves only once at least `hysteresis` px outside.
// Concave outlines are fine; holes are inner polygons removed from the zone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analytics/analytics_config.h"

namespace torchinfer {

enum class ReferencePoint {
  kBottomCenter,
  kCenter,
  kTopCenter,
  kLeftCenter,
  kRightCenter,
};

struct AnalyticsOptions {
  double hysteresis = 4;  // px (>= 0)
  int max_age = 30;       // frames a track's state outlives its last sighting (>= 0)
  ReferencePoint reference = ReferencePoint::kBottomCenter;
};

struct AnalyticsObject {
  std::optional<int> track_id;  // absent: not tracked, never counted
  std::string label;
  int label_id = -1;
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;  // frame pixels
};

enum class AnalyticsEventType { kCrossing, kEntered, kExited };

struct AnalyticsEvent {
  AnalyticsEventType type = AnalyticsEventType::kCrossing;
  std::string name;     // line or zone
  bool forward = true;  // crossings only
  int track_id = 0;
  std::string label;
  int label_id = -1;
  std::int64_t pts_ns = -1;
  std::int64_t dwell_ns = 0;  // exits: time from entering to the last sighting inside
  bool lost = false;          // exits: the track was dropped (max_age), not seen leaving
};

struct DirectionCounts {
  std::uint64_t forward = 0, backward = 0;
  bool operator==(const DirectionCounts& o) const {
    return forward == o.forward && backward == o.backward;
  }
};

struct LineCounts {
  std::string name;
  DirectionCounts total;
  std::map<std::string, DirectionCounts> by_class;  // by label
};

struct ZoneCounts {
  std::string name;
  std::uint64_t inside = 0;  // tracks inside now
  std::uint64_t entered = 0, exited = 0;
};

struct AnalyticsStep {
  std::vector<std::vector<std::string>>
      zones;                           // per object of update(), zone names in config order
  std::vector<AnalyticsEvent> events;  // crossings, then entries, then exits
};

class StreamAnalytics {
 public:
  // Throws Error(kInvalidArgument) for options out of range. `config` must
  // be in pixels (to_pixels).
  StreamAnalytics(const AnalyticsConfig& config, const AnalyticsOptions& options);

  // One frame's objects; pts_ns < 0 when unknown (dwell then 0).
  AnalyticsStep update(const std::vector<AnalyticsObject>& objects, std::int64_t pts_ns);

  // New lines/zones while running. One whose name, geometry and class filter
  // are unchanged keeps its counts and its tracks' state; any other starts
  // from zero; a removed one is gone (its tracks do not exit).
  void set_config(const AnalyticsConfig& config);
  void set_options(const AnalyticsOptions& options);
  // The frame changed size: its pixels are the old ones scaled by (sx, sy)
  // (> 0), and `config` is the new one in the new pixels. The tracks' points
  // scale with the frame; a line or zone whose geometry is the old one
  // scaled (a normalised one, up to rounding) or the old one unchanged keeps
  // its counts and its tracks' sides, then set_config(config).
  void resize(const AnalyticsConfig& config, double sx, double sy);

  std::vector<LineCounts> line_counts() const;  // config order
  std::vector<ZoneCounts> zone_counts() const;  // config order
  std::size_t tracks() const { return tracks_.size(); }

 private:
  struct LineSide {
    int side = 0;   // -1 left, +1 right, 0 not decided yet
    Point2 anchor;  // last point firmly on `side`
    bool counted_forward = false, counted_backward = false;
  };
  struct ZoneStay {
    bool inside = false;
    std::int64_t entered_pts = -1;
  };
  struct Track {
    std::string label;
    int label_id = -1;
    std::uint64_t last_frame = 0;
    std::int64_t last_pts = -1;
    std::map<std::string, LineSide> lines;  // by line name
    std::map<std::string, ZoneStay> zones;  // by zone name
  };
  struct LineState {
    Tripwire line;
    LineCounts counts;
  };
  struct ZoneState {
    Zone zone;
    ZoneCounts counts;
  };

  Point2 reference(const AnalyticsObject& o) const;
  void cross_lines(Track& t, int id, Point2 p, std::int64_t pts, std::vector<AnalyticsEvent>& out);
  void visit_zones(Track& t, int id, Point2 p, std::int64_t pts,
                   std::vector<AnalyticsEvent>& entered, std::vector<AnalyticsEvent>& exited);
  void drop_stale(std::vector<AnalyticsEvent>& exited);

  AnalyticsOptions options_;
  std::vector<LineState> lines_;
  std::vector<ZoneState> zones_;
  std::map<int, Track> tracks_;  // by track id
  std::uint64_t frame_ = 0;
};

// Signed distance of p to zone z (> 0 inside, 0 on the border, < 0 outside).
double zone_distance(const Zone& z, Point2 p);

// Class filter: empty accepts every label.
bool accepts(const std::vector<std::string>& classes, const std::string& label);

const char* to_string(ReferencePoint r);
std::optional<ReferencePoint> reference_point_from_string(const std::string& s);

}  // namespace torchinfer
