#include "qa/qa_gate.h"

#include <string>

#include "common/error.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::qa {

namespace {

using gst_torch::foreach_structure;

std::string number(double v) {
  char buf[32];
  g_ascii_dtostr(buf, sizeof buf, v);
  return buf;
}

DirectionCounts directions(const GstStructure* s) {
  guint64 forward = 0, backward = 0;
  gst_structure_get_uint64(s, "forward", &forward);
  gst_structure_get_uint64(s, "backward", &backward);
  return {forward, backward};
}

nlohmann::ordered_json directions_json(const DirectionCounts& c) {
  return {{"forward", c.forward}, {"backward", c.backward}};
}

}  // namespace

std::string parse_gate(const std::string& text, Gate* gate) {
  const std::string usage = "qa-line: --gate '" + text +
                            "': give x1,y1,x2,y2, two distinct points of the gate line in frame "
                            "pixels (e.g. 320,480,320,0)";
  // One line of torchanalytics' syntax: no name, no second entry.
  if (text.find_first_of(":;") != std::string::npos) return usage;
  std::vector<Tripwire> lines;
  try {
    lines = parse_lines(std::string(kGateLine) + ":" + text);
  } catch (const Error& e) {
    const std::string why = e.what();
    const std::size_t cut = why.find("('gate'): ");  // torchanalytics' entry prefix
    return usage + ": " + (cut == std::string::npos ? why : why.substr(cut + 10));
  }
  if (lines.size() != 1) return usage;
  const Tripwire& l = lines[0];
  if (l.p1.x < 0 || l.p1.y < 0 || l.p2.x < 0 || l.p2.y < 0)
    return usage + ": a coordinate is negative";
  gate->p1 = l.p1;
  gate->p2 = l.p2;
  return {};
}

std::string gate_outside(const Gate& g, int width, int height) {
  for (const Point2& p : {g.p1, g.p2})
    if (p.x > width || p.y > height)
      return "qa-line: --gate " + number(g.p1.x) + "," + number(g.p1.y) + "," + number(g.p2.x) +
             "," + number(g.p2.y) + ": the point (" + number(p.x) + "," + number(p.y) +
             ") lies outside the " + std::to_string(width) + "x" + std::to_string(height) +
             " frame; give both ends inside it";
  return {};
}

std::string gate_lines(const Gate& g) {
  return std::string(kGateLine) + ":" + number(g.p1.x) + "," + number(g.p1.y) + "," +
         number(g.p2.x) + "," + number(g.p2.y);
}

std::vector<QaCrossing> read_gate(GstBuffer* buf, const std::set<std::string>& part_classes,
                                  GateCounts& counts) {
  std::vector<QaCrossing> crossed;
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_ANALYTICS_META_NAME);
  if (!cm) return crossed;
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  foreach_structure(s, "events", [&](const GstStructure* e) {
    const gchar* line = gst_structure_get_string(e, "line");
    const gchar* label = gst_structure_get_string(e, "label");
    const gchar* direction = gst_structure_get_string(e, "direction");
    int id = 0;
    if (!gst_structure_has_name(e, "torchanalytics-crossing") || g_strcmp0(line, kGateLine) != 0 ||
        !label || !part_classes.count(label) || !gst_structure_get_int(e, "id", &id))
      return;
    crossed.push_back({id, g_strcmp0(direction, "backward") != 0});
  });
  foreach_structure(s, "lines", [&](const GstStructure* l) {
    if (g_strcmp0(gst_structure_get_string(l, "name"), kGateLine) != 0) return;
    foreach_structure(l, "by-class", [&](const GstStructure* k) {
      const gchar* label = gst_structure_get_string(k, "label");
      if (label && part_classes.count(label)) counts.by_class[label] = directions(k);
    });
  });
  return crossed;
}

nlohmann::ordered_json gate_json(const Gate& g, const GateCounts& c, int not_at_gate) {
  nlohmann::ordered_json j;
  j["line"] = {g.p1.x, g.p1.y, g.p2.x, g.p2.y};
  DirectionCounts total;
  auto& by_class = j["by_class"] = nlohmann::ordered_json::object();
  for (const auto& [label, n] : c.by_class) {
    total.forward += n.forward;
    total.backward += n.backward;
    by_class[label] = directions_json(n);
  }
  j["forward"] = total.forward;
  j["backward"] = total.backward;
  auto& verdicts = j["verdicts"] = nlohmann::ordered_json::object();
  for (const char* d : {"forward", "backward"}) {
    auto& v = verdicts[d] = {{"pass", 0}, {"reject", 0}, {"incomplete", 0}};
    if (auto it = c.verdicts.find(d); it != c.verdicts.end())
      for (const auto& [verdict, n] : it->second) v[verdict] = n;
  }
  j["not_at_gate"] = not_at_gate;
  return j;
}

}  // namespace torchinfer::qa
