#include "analytics/analytics.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "common/error.h"

namespace torchinfer {
namespace {

double cross(Point2 o, Point2 a, Point2 b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

// Signed distance to the infinite line P1->P2: > 0 on its right (y down).
double side_distance(const Tripwire& l, Point2 p) {
  const double len = std::hypot(l.p2.x - l.p1.x, l.p2.y - l.p1.y);
  return cross(l.p1, l.p2, p) / len;
}

// a and b lie strictly on either side of the line; does a->b pass between
// P1 and P2 (an end point included)?
bool cuts_segment(Point2 a, Point2 b, const Tripwire& l) {
  return cross(a, b, l.p1) * cross(a, b, l.p2) <= 0;
}

double polygon_distance(const Polygon& poly, Point2 p) {
  std::vector<cv::Point2f> c;
  c.reserve(poly.size());
  for (const Point2& q : poly) c.emplace_back(static_cast<float>(q.x), static_cast<float>(q.y));
  return cv::pointPolygonTest(c, cv::Point2f(static_cast<float>(p.x), static_cast<float>(p.y)),
                              true);
}

void check(const AnalyticsOptions& o) {
  if (!std::isfinite(o.hysteresis) || o.hysteresis < 0)
    throw Error(ErrorKind::kInvalidArgument, "analytics: hysteresis must be >= 0 pixels");
  if (o.max_age < 0) throw Error(ErrorKind::kInvalidArgument, "analytics: max-age must be >= 0");
}

std::int64_t dwell(std::int64_t from, std::int64_t to) {
  return from >= 0 && to >= from ? to - from : 0;
}

}  // namespace

double zone_distance(const Zone& z, Point2 p) {
  double d = polygon_distance(z.outline, p);
  for (const Polygon& h : z.holes) d = std::min(d, -polygon_distance(h, p));
  return d;
}

bool accepts(const std::vector<std::string>& classes, const std::string& label) {
  return classes.empty() || std::find(classes.begin(), classes.end(), label) != classes.end();
}

const char* to_string(ReferencePoint r) {
  switch (r) {
    case ReferencePoint::kBottomCenter:
      return "bottom-center";
    case ReferencePoint::kCenter:
      return "center";
    case ReferencePoint::kTopCenter:
      return "top-center";
    case ReferencePoint::kLeftCenter:
      return "left-center";
    case ReferencePoint::kRightCenter:
      return "right-center";
  }
  return "?";
}

std::optional<ReferencePoint> reference_point_from_string(const std::string& s) {
  for (ReferencePoint r :
       {ReferencePoint::kBottomCenter, ReferencePoint::kCenter, ReferencePoint::kTopCenter,
        ReferencePoint::kLeftCenter, ReferencePoint::kRightCenter})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

StreamAnalytics::StreamAnalytics(const AnalyticsConfig& config, const AnalyticsOptions& options)
    : options_(options) {
  check(options);
  set_config(config);
}

void StreamAnalytics::set_options(const AnalyticsOptions& options) {
  check(options);
  options_ = options;
}

void StreamAnalytics::set_config(const AnalyticsConfig& config) {
  if (config.normalized)
    throw Error(ErrorKind::kInvalidArgument, "analytics: the config must be in pixels");
  std::vector<LineState> lines;
  for (const Tripwire& l : config.lines) {
    auto old =
        std::find_if(lines_.begin(), lines_.end(), [&](const LineState& s) { return s.line == l; });
    lines.push_back(old != lines_.end() ? *old : LineState{l, LineCounts{l.name, {}, {}}});
  }
  std::vector<ZoneState> zones;
  for (const Zone& z : config.zones) {
    auto old =
        std::find_if(zones_.begin(), zones_.end(), [&](const ZoneState& s) { return s.zone == z; });
    zones.push_back(old != zones_.end() ? *old : ZoneState{z, ZoneCounts{z.name, 0, 0, 0}});
  }
  // Per-track state only for what was kept unchanged.
  auto kept_line = [&](const std::string& name) {
    return std::any_of(lines_.begin(), lines_.end(), [&](const LineState& o) {
      return o.line.name == name &&
             std::any_of(lines.begin(), lines.end(),
                         [&](const LineState& n) { return n.line == o.line; });
    });
  };
  auto kept_zone = [&](const std::string& name) {
    return std::any_of(zones_.begin(), zones_.end(), [&](const ZoneState& o) {
      return o.zone.name == name &&
             std::any_of(zones.begin(), zones.end(),
                         [&](const ZoneState& n) { return n.zone == o.zone; });
    });
  };
  for (auto& [id, t] : tracks_) {
    for (auto it = t.lines.begin(); it != t.lines.end();)
      it = kept_line(it->first) ? std::next(it) : t.lines.erase(it);
    for (auto it = t.zones.begin(); it != t.zones.end();)
      it = kept_zone(it->first) ? std::next(it) : t.zones.erase(it);
  }
  lines_ = std::move(lines);
  zones_ = std::move(zones);
}

void StreamAnalytics::resize(const AnalyticsConfig& config, double sx, double sy) {
  if (!(sx > 0) || !(sy > 0) || !std::isfinite(sx) || !std::isfinite(sy))
    throw Error(ErrorKind::kInvalidArgument, "analytics: a frame size change needs scales > 0");
  // Scaled old geometry equal to the new one within rounding of the
  // normalised coordinates (a few ulps of a frame's size).
  auto same = [&](Point2 old, Point2 now) {
    const Point2 s{old.x * sx, old.y * sy};
    return std::abs(s.x - now.x) <= 1e-9 * (1 + std::abs(now.x)) &&
           std::abs(s.y - now.y) <= 1e-9 * (1 + std::abs(now.y));
  };
  auto same_polygon = [&](const Polygon& a, const Polygon& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  };
  for (LineState& ls : lines_)
    for (const Tripwire& l : config.lines)
      if (l.name == ls.line.name && l.classes == ls.line.classes && same(ls.line.p1, l.p1) &&
          same(ls.line.p2, l.p2))
        ls.line = l;  // set_config below finds it unchanged
  for (ZoneState& zs : zones_)
    for (const Zone& z : config.zones) {
      if (z.name != zs.zone.name || z.classes != zs.zone.classes ||
          z.holes.size() != zs.zone.holes.size() || !same_polygon(zs.zone.outline, z.outline))
        continue;
      bool holes = true;
      for (std::size_t i = 0; i < z.holes.size(); ++i)
        holes = holes && same_polygon(zs.zone.holes[i], z.holes[i]);
      if (holes) zs.zone = z;
    }
  for (auto& [id, t] : tracks_)
    for (auto& [name, side] : t.lines) side.anchor = {side.anchor.x * sx, side.anchor.y * sy};
  set_config(config);
}

Point2 StreamAnalytics::reference(const AnalyticsObject& o) const {
  const double cx = (o.x_min + o.x_max) / 2, cy = (o.y_min + o.y_max) / 2;
  switch (options_.reference) {
    case ReferencePoint::kCenter:
      return {cx, cy};
    case ReferencePoint::kTopCenter:
      return {cx, o.y_min};
    case ReferencePoint::kLeftCenter:
      return {o.x_min, cy};
    case ReferencePoint::kRightCenter:
      return {o.x_max, cy};
    case ReferencePoint::kBottomCenter:
      break;
  }
  return {cx, o.y_max};
}

void StreamAnalytics::cross_lines(Track& t, int id, Point2 p, std::int64_t pts,
                                  std::vector<AnalyticsEvent>& out) {
  for (LineState& ls : lines_) {
    if (!accepts(ls.line.classes, t.label)) continue;
    const double d = side_distance(ls.line, p);
    if (d == 0 || std::abs(d) < options_.hysteresis) continue;  // in the band: side unchanged
    const int side = d > 0 ? 1 : -1;
    LineSide& s = t.lines[ls.line.name];
    const int was = s.side;
    const Point2 from = s.anchor;
    s.side = side;
    s.anchor = p;
    if (was == 0 || was == side || !cuts_segment(from, p, ls.line)) continue;
    const bool forward = side > 0;
    bool& counted = forward ? s.counted_forward : s.counted_backward;
    if (counted) continue;
    counted = true;
    DirectionCounts& total = ls.counts.total;
    DirectionCounts& cls = ls.counts.by_class[t.label];
    (forward ? total.forward : total.backward)++;
    (forward ? cls.forward : cls.backward)++;
    AnalyticsEvent e;
    e.type = AnalyticsEventType::kCrossing;
    e.name = ls.line.name;
    e.forward = forward;
    e.track_id = id;
    e.label = t.label;
    e.label_id = t.label_id;
    e.pts_ns = pts;
    out.push_back(std::move(e));
  }
}

void StreamAnalytics::visit_zones(Track& t, int id, Point2 p, std::int64_t pts,
                                  std::vector<AnalyticsEvent>& entered,
                                  std::vector<AnalyticsEvent>& exited) {
  for (ZoneState& zs : zones_) {
    if (!accepts(zs.zone.classes, t.label)) continue;
    const double d = zone_distance(zs.zone, p);
    ZoneStay& s = t.zones[zs.zone.name];
    const bool leaves = options_.hysteresis > 0 ? d <= -options_.hysteresis : d < 0;
    if (s.inside == (d >= 0) || (s.inside && !leaves)) continue;
    AnalyticsEvent e;
    e.name = zs.zone.name;
    e.track_id = id;
    e.label = t.label;
    e.label_id = t.label_id;
    e.pts_ns = pts;
    if (!s.inside) {
      s.inside = true;
      s.entered_pts = pts;
      zs.counts.entered++;
      e.type = AnalyticsEventType::kEntered;
      entered.push_back(std::move(e));
    } else {
      s.inside = false;
      zs.counts.exited++;
      e.type = AnalyticsEventType::kExited;
      e.dwell_ns = dwell(s.entered_pts, pts);
      exited.push_back(std::move(e));
    }
  }
}

void StreamAnalytics::drop_stale(std::vector<AnalyticsEvent>& exited) {
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    Track& t = it->second;
    if (frame_ - t.last_frame <= static_cast<std::uint64_t>(options_.max_age)) {
      ++it;
      continue;
    }
    for (ZoneState& zs : zones_) {
      auto s = t.zones.find(zs.zone.name);
      if (s == t.zones.end() || !s->second.inside) continue;
      zs.counts.exited++;
      AnalyticsEvent e;
      e.type = AnalyticsEventType::kExited;
      e.name = zs.zone.name;
      e.track_id = it->first;
      e.label = t.label;
      e.label_id = t.label_id;
      e.pts_ns = t.last_pts;
      e.dwell_ns = dwell(s->second.entered_pts, t.last_pts);
      e.lost = true;
      exited.push_back(std::move(e));
    }
    it = tracks_.erase(it);
  }
}

AnalyticsStep StreamAnalytics::update(const std::vector<AnalyticsObject>& objects,
                                      std::int64_t pts_ns) {
  ++frame_;
  AnalyticsStep step;
  step.zones.resize(objects.size());
  std::vector<AnalyticsEvent> entered, exited;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const AnalyticsObject& o = objects[i];
    const Point2 p = reference(o);
    if (!o.track_id) {  // placed, never counted
      for (const ZoneState& zs : zones_)
        if (accepts(zs.zone.classes, o.label) && zone_distance(zs.zone, p) >= 0)
          step.zones[i].push_back(zs.zone.name);
      continue;
    }
    Track& t = tracks_[*o.track_id];
    t.label = o.label;
    t.label_id = o.label_id;
    t.last_frame = frame_;
    t.last_pts = pts_ns;
    cross_lines(t, *o.track_id, p, pts_ns, step.events);
    visit_zones(t, *o.track_id, p, pts_ns, entered, exited);
    for (const ZoneState& zs : zones_) {
      auto s = t.zones.find(zs.zone.name);
      if (s != t.zones.end() && s->second.inside) step.zones[i].push_back(zs.zone.name);
    }
  }
  drop_stale(exited);
  for (ZoneState& zs : zones_) {
    zs.counts.inside = 0;
    for (const auto& [id, t] : tracks_) {
      auto s = t.zones.find(zs.zone.name);
      if (s != t.zones.end() && s->second.inside) zs.counts.inside++;
    }
  }
  for (auto* v : {&entered, &exited}) step.events.insert(step.events.end(), v->begin(), v->end());
  return step;
}

std::vector<LineCounts> StreamAnalytics::line_counts() const {
  std::vector<LineCounts> out;
  for (const LineState& l : lines_) out.push_back(l.counts);
  return out;
}

std::vector<ZoneCounts> StreamAnalytics::zone_counts() const {
  std::vector<ZoneCounts> out;
  for (const ZoneState& z : zones_) out.push_back(z.counts);
  return out;
}

}  // namespace torchinfer
