#include "server/core/evidence_spec.h"

#include "common/utf8.h"
#include "server/core/server_config.h"

namespace torchinfer::server {

using nlohmann::json;

namespace {

// "classes" or "lines": 1 to 64 names.
std::vector<std::string> parse_names(const json& v, const std::string& field,
                                     const std::string& origin, const std::string& what) {
  if (!v.is_array() || v.empty() || v.size() > 64)
    throw FieldError(origin, field,
                     "must be a list of 1 to 64 " + what +
                         (what == "class labels" ? " (leave it out to keep evidence of every class)"
                                                 : " (leave it out: an event is a new track)"));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    const std::string one = what == "class labels" ? "a class label" : "a line name";
    if (!v[i].is_string()) throw FieldError(origin, at, "must be a string (" + one + ")");
    const std::string label = v[i].get<std::string>();
    if (label.empty() || label.size() > 64 || printable(label, 64) != label)
      throw FieldError(origin, at, one + " has 1 to 64 printable characters");
    out.push_back(label);
  }
  return out;
}

bool has_dot_dot(const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (path.compare(start, end - start, "..") == 0 && end - start == 2) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

EvidenceSpec parse_evidence_spec(const json& j, const std::string& field, const std::string& origin,
                                 bool track, bool aravis) {
  if (!j.is_object())
    throw FieldError(origin, field, "must be a JSON object, not " + std::string(j.type_name()));
  if (aravis)
    throw FieldError(origin, field,
                     "not available for aravis:// cameras yet: their Bayer/mono frames are "
                     "analysed as they come, and evidence encodes raw video");
  if (!track)
    throw FieldError(origin, field,
                     "needs \"track\": true on this stream: an event is a new track of one of "
                     "the classes, kept once per track");
  EvidenceSpec e;
  json settings = j;
  if (j.contains("classes")) {
    e.classes = parse_names(j.at("classes"), field + ".classes", origin, "class labels");
    settings.erase("classes");
  }
  if (j.contains("lines")) {
    e.lines = parse_names(j.at("lines"), field + ".lines", origin, "line names");
    settings.erase("lines");
  }
  try {
    e.settings = evidence::parse_evidence_settings(settings, field);
  } catch (const FieldError& x) {
    // The unknown-field message lists the store's keys; "classes" is ours.
    std::string problem = x.problem();
    const std::string list = "the fields are ";
    if (const auto at = problem.find(list); at != std::string::npos)
      problem.insert(at + list.size(), "classes, lines, ");
    throw FieldError(origin, x.field(), problem);
  }
  if (has_dot_dot(e.settings.dir))
    throw FieldError(origin, field + ".dir",
                     "may not hold '..': name a folder under output_dir (relative) or an "
                     "absolute one (config file only)");
  return e;
}

json to_json(const EvidenceSpec& e) {
  json j = evidence::to_json(e.settings);
  if (e.settings.dir.empty()) j.erase("dir");
  if (!e.classes.empty()) j["classes"] = e.classes;
  if (!e.lines.empty()) j["lines"] = e.lines;
  return j;
}

std::string resolve_evidence_dir(const EvidenceSpec& e, const std::string& output_dir,
                                 const std::string& id) {
  const std::string& d = e.settings.dir;
  if (d.empty()) return output_dir + "/evidence/" + id;
  if (d[0] == '/') return d;
  return output_dir + "/" + d;
}

bool keeps_class(const EvidenceSpec& e, const std::string& label) {
  if (e.classes.empty()) return true;
  for (const auto& c : e.classes)
    if (c == label) return true;
  return false;
}

}  // namespace torchinfer::server
