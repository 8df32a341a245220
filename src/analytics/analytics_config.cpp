#include "analytics/analytics_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/json_file.h"

namespace torchinfer {
namespace {

// Bounds on what a user can ask for: far above any real gate layout, low
// enough that a hostile config cannot make every frame slow.
constexpr std::size_t kMaxEntries = 64;
constexpr std::size_t kMaxPolygonPoints = 256;
constexpr std::size_t kMaxNameLength = 64;
constexpr std::size_t kMaxConfigBytes = 1u << 20;

[[noreturn]] void fail(const std::string& msg) {
  throw Error(ErrorKind::kConfigInvalid, msg);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

// Empty when valid, otherwise why not.
std::string name_problem(const std::string& name) {
  if (name.empty()) return "the name is empty";
  if (name.size() > kMaxNameLength) return "the name is longer than 64 characters";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return "the name '" + name + "' has a character other than letters, digits, '_', '-', '.'";
  return {};
}

double parse_number(const std::string& s, const std::string& where) {
  double v = 0;
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, v);
  if (s.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(v))
    fail(where + ": '" + s + "' is not a number");
  return v;
}

double twice_area(const Polygon& p) {
  double a = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Point2& u = p[i];
    const Point2& v = p[(i + 1) % p.size()];
    a += u.x * v.y - v.x * u.y;
  }
  return a;
}

double orient(Point2 o, Point2 a, Point2 b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

bool all_on_one_line(const Polygon& p) {
  std::size_t a = 1;
  while (a < p.size() && p[a] == p[0]) ++a;
  for (std::size_t i = a + 1; i < p.size(); ++i)
    if (orient(p[0], p[a], p[i]) != 0) return false;
  return true;
}

// q on segment a-b, given that the three are collinear.
bool on_segment(Point2 a, Point2 b, Point2 q) {
  return std::min(a.x, b.x) <= q.x && q.x <= std::max(a.x, b.x) && std::min(a.y, b.y) <= q.y &&
         q.y <= std::max(a.y, b.y);
}

bool segments_meet(Point2 a, Point2 b, Point2 c, Point2 d) {
  const double d1 = orient(c, d, a), d2 = orient(c, d, b), d3 = orient(a, b, c),
               d4 = orient(a, b, d);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)))
    return true;
  return (d1 == 0 && on_segment(c, d, a)) || (d2 == 0 && on_segment(c, d, b)) ||
         (d3 == 0 && on_segment(a, b, c)) || (d4 == 0 && on_segment(a, b, d));
}

// The first two edges (0-based: edge i joins point i and i+1, the last one
// closes the outline) that cross or touch away from their shared corner.
std::optional<std::pair<std::size_t, std::size_t>> crossing_edges(const Polygon& p) {
  const std::size_t n = p.size();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = i + 2; k < n; ++k) {
      if (i == 0 && k == n - 1) continue;  // neighbours through the closing corner
      if (segments_meet(p[i], p[(i + 1) % n], p[k], p[(k + 1) % n])) return {{i, k}};
    }
  return std::nullopt;
}

// Points are 1-based in messages, as a person counts them.
void check_polygon(const Polygon& p, const std::string& where) {
  if (p.size() < 3) fail(where + ": needs at least 3 points, got " + std::to_string(p.size()));
  if (p.size() > kMaxPolygonPoints) fail(where + ": more than 256 points");
  if (all_on_one_line(p)) fail(where + ": the points enclose no area (all on one line)");
  if (const auto e = crossing_edges(p)) {
    const std::size_t n = p.size(), i = e->first, k = e->second;
    auto edge = [&](std::size_t j) {
      return "point " + std::to_string(j + 1) + "->" + std::to_string((j + 1) % n + 1);
    };
    fail(where + ": the outline crosses itself (edge " + edge(i) + " meets edge " + edge(k) +
         "); give the points in order around the zone");
  }
  if (twice_area(p) == 0) fail(where + ": the points enclose no area");
}

void check_line(const Tripwire& l, const std::string& where) {
  if (l.p1 == l.p2) fail(where + ": the two points are the same; a line needs two");
}

// "name:numbers" of one entry; where = "lines: entry 2".
std::pair<std::string, std::vector<double>> name_and_numbers(const std::string& entry,
                                                             const std::string& where,
                                                             const char* syntax) {
  const auto colon = entry.find(':');
  if (colon == std::string::npos) fail(where + ": expected " + syntax + ", got '" + entry + "'");
  const std::string name = trim(entry.substr(0, colon));
  if (const std::string p = name_problem(name); !p.empty()) fail(where + ": " + p);
  const std::string named = where + " ('" + name + "')";
  std::vector<double> v;
  for (const std::string& n : split(entry.substr(colon + 1), ','))
    v.push_back(parse_number(n, named));
  return {name, v};
}

std::vector<std::string> entries(const std::string& text, const char* what) {
  if (trim(text).empty()) return {};
  std::vector<std::string> e = split(text, ';');
  if (!e.empty() && e.back().empty()) e.pop_back();  // a trailing ';'
  if (e.size() > kMaxEntries) fail(std::string(what) + ": more than 64 entries");
  for (std::size_t i = 0; i < e.size(); ++i)
    if (e[i].empty())
      fail(std::string(what) + ": entry " + std::to_string(i + 1) + " is empty (two ';' in a row)");
  return e;
}

template <class T>
void check_unique(const std::vector<T>& items, const std::string& what) {
  std::set<std::string> seen;
  for (const T& t : items)
    if (!seen.insert(t.name).second) fail(what + ": the name '" + t.name + "' is used twice");
}

// ---- JSON -----------------------------------------------------------------

using json = nlohmann::json;

Point2 json_point(const json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number() || !j[1].is_number())
    fail(where + ": a point is [x, y] (two numbers)");
  const Point2 p{j[0].get<double>(), j[1].get<double>()};
  if (!std::isfinite(p.x) || !std::isfinite(p.y)) fail(where + ": not a finite number");
  return p;
}

Polygon json_points(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where + ": expected an array of [x, y] points");
  if (j.size() > kMaxPolygonPoints) fail(where + ": more than 256 points");
  Polygon p;
  for (std::size_t i = 0; i < j.size(); ++i)
    p.push_back(json_point(j[i], where + "[" + std::to_string(i) + "]"));
  return p;
}

std::vector<std::string> json_classes(const json& o, const std::string& where) {
  std::vector<std::string> out;
  if (!o.contains("classes")) return out;
  const json& c = o["classes"];
  if (!c.is_array()) fail(where + ".classes: expected an array of label strings");
  for (const json& l : c) {
    if (!l.is_string() || l.get<std::string>().empty())
      fail(where + ".classes: every entry is a non-empty label string");
    out.push_back(l.get<std::string>());
  }
  return out;
}

void check_keys(const json& o, const std::set<std::string>& known, const std::string& where) {
  if (!o.is_object()) fail(where + ": expected an object");
  for (const auto& [k, v] : o.items())
    if (!known.count(k)) fail(where + ": unknown field '" + k + "'");
}

std::string json_name(const json& o, const std::string& where) {
  if (!o.contains("name") || !o["name"].is_string()) fail(where + ".name: missing (a string)");
  const std::string name = o["name"].get<std::string>();
  if (const std::string p = name_problem(name); !p.empty()) fail(where + ".name: " + p);
  return name;
}

Tripwire json_line(const json& o, const std::string& where) {
  check_keys(o, {"name", "points", "classes"}, where);
  Tripwire l;
  l.name = json_name(o, where);
  if (!o.contains("points")) fail(where + ".points: missing ([[x1, y1], [x2, y2]])");
  const Polygon p = json_points(o["points"], where + ".points");
  if (p.size() != 2) fail(where + ".points: a line has exactly 2 points");
  l.p1 = p[0];
  l.p2 = p[1];
  check_line(l, where + ".points");
  l.classes = json_classes(o, where);
  return l;
}

Zone json_zone(const json& o, const std::string& where) {
  check_keys(o, {"name", "points", "holes", "classes"}, where);
  Zone z;
  z.name = json_name(o, where);
  if (!o.contains("points")) fail(where + ".points: missing ([[x, y], ...], at least 3)");
  z.outline = json_points(o["points"], where + ".points");
  check_polygon(z.outline, where + ".points");
  if (o.contains("holes")) {
    const json& h = o["holes"];
    if (!h.is_array() || h.size() > kMaxEntries)
      fail(where + ".holes: expected an array of polygons (at most 64)");
    for (std::size_t i = 0; i < h.size(); ++i) {
      const std::string w = where + ".holes[" + std::to_string(i) + "]";
      z.holes.push_back(json_points(h[i], w));
      check_polygon(z.holes.back(), w);
    }
  }
  z.classes = json_classes(o, where);
  return z;
}

template <class T>
std::vector<T> json_list(const json& j, const char* key, const std::string& origin,
                         T (*one)(const json&, const std::string&)) {
  std::vector<T> out;
  if (!j.contains(key)) return out;
  const json& a = j[key];
  const std::string where = origin + ": " + key;
  if (!a.is_array()) fail(where + ": expected an array");
  if (a.size() > kMaxEntries) fail(where + ": more than 64 entries");
  for (std::size_t i = 0; i < a.size(); ++i)
    out.push_back(one(a[i], where + "[" + std::to_string(i) + "]"));
  check_unique(out, where);
  return out;
}

Point2 scaled(Point2 p, int w, int h) {
  return {p.x * w, p.y * h};
}

}  // namespace

std::vector<Tripwire> parse_lines(const std::string& text) {
  std::vector<Tripwire> out;
  const std::vector<std::string> e = entries(text, "lines");
  for (std::size_t i = 0; i < e.size(); ++i) {
    const std::string where = "lines: entry " + std::to_string(i + 1);
    auto [name, v] = name_and_numbers(e[i], where, "name:x1,y1,x2,y2");
    if (v.size() != 4)
      fail(where + " ('" + name + "'): expected name:x1,y1,x2,y2, got " + std::to_string(v.size()) +
           " numbers");
    Tripwire l{name, {v[0], v[1]}, {v[2], v[3]}, {}};
    check_line(l, where + " ('" + name + "')");
    out.push_back(std::move(l));
  }
  check_unique(out, "lines");
  return out;
}

std::vector<Zone> parse_zones(const std::string& text) {
  std::vector<Zone> out;
  const std::vector<std::string> e = entries(text, "zones");
  for (std::size_t i = 0; i < e.size(); ++i) {
    const std::string where = "zones: entry " + std::to_string(i + 1);
    auto [name, v] = name_and_numbers(e[i], where, "name:x1,y1,x2,y2,x3,y3[,...]");
    const std::string named = where + " ('" + name + "')";
    if (v.size() % 2 != 0)
      fail(named + ": an odd count of numbers (" + std::to_string(v.size()) +
           "); points are x,y pairs");
    Zone z;
    z.name = name;
    for (std::size_t k = 0; k + 1 < v.size(); k += 2) z.outline.push_back({v[k], v[k + 1]});
    check_polygon(z.outline, named);
    out.push_back(std::move(z));
  }
  check_unique(out, "zones");
  return out;
}

std::vector<std::string> parse_classes(const std::string& text) {
  std::vector<std::string> out;
  if (trim(text).empty()) return out;
  const std::vector<std::string> labels = split(text, ',');
  if (labels.size() > kMaxEntries) fail("classes: more than 64 labels");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string where = "classes: label " + std::to_string(i + 1);
    if (labels[i].empty()) fail(where + " is empty (two ',' in a row, or one at an end)");
    if (labels[i].size() > kMaxNameLength) fail(where + " is longer than 64 characters");
    if (std::find(out.begin(), out.end(), labels[i]) != out.end())
      fail(where + ": '" + labels[i] + "' is given twice");
    out.push_back(labels[i]);
  }
  return out;
}

AnalyticsConfig parse_analytics_json(const json& j, const std::string& origin) {
  check_keys(j, {"normalized", "lines", "zones"}, origin);
  AnalyticsConfig c;
  if (j.contains("normalized")) {
    if (!j["normalized"].is_boolean()) fail(origin + ": normalized: expected true or false");
    c.normalized = j["normalized"].get<bool>();
  }
  c.lines = json_list<Tripwire>(j, "lines", origin, json_line);
  c.zones = json_list<Zone>(j, "zones", origin, json_zone);
  return c;
}

AnalyticsConfig read_analytics_file(const std::string& path) {
  return parse_analytics_json(read_json_file(path, "analytics config", kMaxConfigBytes), path);
}

AnalyticsConfig to_pixels(const AnalyticsConfig& c, int width, int height) {
  AnalyticsConfig out = c;
  out.normalized = false;
  if (!c.normalized) return out;
  for (Tripwire& l : out.lines) {
    l.p1 = scaled(l.p1, width, height);
    l.p2 = scaled(l.p2, width, height);
  }
  for (Zone& z : out.zones) {
    for (Point2& p : z.outline) p = scaled(p, width, height);
    for (Polygon& h : z.holes)
      for (Point2& p : h) p = scaled(p, width, height);
  }
  return out;
}

}  // namespace torchinfer
