#include "server/core/stream_analytics.h"

#include "server/core/server_config.h"

namespace torchinfer::server {

namespace {

using json = nlohmann::json;

// torchanalytics' JSON errors start with their origin and ": "; the server's
// field path replaces it.
std::string without_origin(const std::string& why) {
  return why.rfind(": ", 0) == 0 ? why.substr(2) : why;
}

template <class T>
std::vector<T> parse_one(const json& v, const char* key, const std::string& field,
                         const std::string& origin, std::vector<T> (*from_text)(const std::string&),
                         std::vector<T> AnalyticsConfig::*member) {
  try {
    if (v.is_string()) return from_text(v.get<std::string>());
    if (v.is_array()) return parse_analytics_json(json{{key, v}}, "").*member;
  } catch (const Error& e) {
    throw FieldError(origin, field, without_origin(e.what()));
  }
  throw FieldError(origin, field,
                   std::string("must be a string (\"name:x1,y1,...;...\") or an array of ") + key +
                       " objects, not " + v.type_name());
}

json points_json(const Polygon& p) {
  json a = json::array();
  for (const Point2& q : p) a.push_back({q.x, q.y});
  return a;
}

json direction_json(const DirectionCounts& c) {
  return {{"forward", c.forward}, {"backward", c.backward}};
}

}  // namespace

AnalyticsConfig parse_analytics_fields(const json* lines, const json* zones,
                                       const std::string& prefix, const std::string& origin) {
  const auto field = [&](const char* k) { return prefix.empty() ? k : prefix + "." + k; };
  AnalyticsConfig c;
  if (lines)
    c.lines =
        parse_one(*lines, "lines", field("lines"), origin, parse_lines, &AnalyticsConfig::lines);
  if (zones)
    c.zones =
        parse_one(*zones, "zones", field("zones"), origin, parse_zones, &AnalyticsConfig::zones);
  return c;
}

AnalyticsConfig parse_analytics_body(const json& body) {
  if (!body.is_object())
    throw FieldError("", "(body)",
                     std::string("must be a JSON object {\"lines\": ..., \"zones\": ...}, not ") +
                         body.type_name());
  for (const auto& [k, v] : body.items())
    if (k != "lines" && k != "zones")
      throw FieldError("", k, "unknown field; the fields are lines, zones");
  const auto get = [&](const char* k) { return body.contains(k) ? &body.at(k) : nullptr; };
  return parse_analytics_fields(get("lines"), get("zones"), "", "");
}

json layout_json(const AnalyticsConfig& c) {
  json lines = json::array(), zones = json::array();
  for (const Tripwire& l : c.lines) {
    json j = {{"name", l.name}, {"points", points_json({l.p1, l.p2})}};
    if (!l.classes.empty()) j["classes"] = l.classes;
    lines.push_back(std::move(j));
  }
  for (const Zone& z : c.zones) {
    json j = {{"name", z.name}, {"points", points_json(z.outline)}};
    if (!z.holes.empty()) {
      j["holes"] = json::array();
      for (const Polygon& h : z.holes) j["holes"].push_back(points_json(h));
    }
    if (!z.classes.empty()) j["classes"] = z.classes;
    zones.push_back(std::move(j));
  }
  return {{"normalized", c.normalized}, {"lines", std::move(lines)}, {"zones", std::move(zones)}};
}

json counts_json(const std::vector<LineCounts>& lines, const std::vector<ZoneCounts>& zones) {
  json jl = json::object(), jz = json::object();
  for (const LineCounts& l : lines) {
    json by_class = json::object();
    for (const auto& [label, c] : l.by_class) by_class[label] = direction_json(c);
    json one = direction_json(l.total);
    one["by_class"] = std::move(by_class);
    jl[l.name] = std::move(one);
  }
  for (const ZoneCounts& z : zones)
    jz[z.name] = {{"inside", z.inside}, {"entered", z.entered}, {"exited", z.exited}};
  return {{"lines", std::move(jl)}, {"zones", std::move(jz)}};
}

}  // namespace torchinfer::server
