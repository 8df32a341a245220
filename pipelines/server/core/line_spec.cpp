#include "server/core/line_spec.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "common/field_error.h"

namespace torchinfer::server {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxClasses = 64;

// A list of 1..64 class labels (1..64 printable characters each).
std::set<std::string> classes(const json& j, const std::string& key, const std::string& field,
                              const std::string& origin) {
  const json& v = j.at(key);
  if (!v.is_array() || v.empty() || v.size() > kMaxClasses)
    throw FieldError(origin, field + "." + key, "must be a list of 1 to 64 class labels");
  std::set<std::string> out;
  for (const auto& c : v) {
    const std::string s = c.is_string() ? c.get<std::string>() : "";
    if (s.empty() || s.size() > 64 ||
        std::any_of(s.begin(), s.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
      throw FieldError(origin, field + "." + key,
                       "each class is a label of 1 to 64 printable characters");
    out.insert(s);
  }
  return out;
}

double fraction(const json& j, const std::string& key, double fallback, const std::string& field,
                const std::string& origin) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
    throw FieldError(origin, field + "." + key, "must be a number from 0 to 1");
  return v.get<double>();
}

void only_known(const json& j, const std::set<std::string>& known, const std::string& field,
                const std::string& origin) {
  if (!j.is_object()) throw FieldError(origin, field, "must be an object");
  for (const auto& [k, v] : j.items())
    if (!known.count(k)) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      throw FieldError(origin, field + "." + k, "unknown field; the fields are " + list);
    }
}

}  // namespace

PartsSpec parse_parts_spec(const json& j, const std::string& field, const std::string& origin,
                           const std::vector<std::string>& models, bool track) {
  only_known(j,
             {"classifier", "part_classes", "defect_classes", "part_threshold", "defect_threshold"},
             field, origin);
  if (!track)
    throw FieldError(origin, field, "needs \"track\": true (a verdict is given per tracked part)");
  PartsSpec p;
  if (j.contains("classifier")) {
    const json& c = j.at("classifier");
    p.classifier = c.is_string() ? c.get<std::string>() : "";
    if (std::find(models.begin(), models.end(), p.classifier) == models.end())
      throw FieldError(origin, field + ".classifier",
                       "name one of the configured models' ids (the part classifier)");
  }
  if (j.contains("part_classes")) p.rules.part_classes = classes(j, "part_classes", field, origin);
  if (j.contains("defect_classes"))
    p.rules.defect_classes = classes(j, "defect_classes", field, origin);
  p.part_threshold = fraction(j, "part_threshold", p.part_threshold, field, origin);
  p.rules.defect_threshold =
      fraction(j, "defect_threshold", p.rules.defect_threshold, field, origin);
  // As the QA app: the classifier votes, or the detector's defect boxes count.
  p.rules.rule = p.classifier.empty() ? QaRule::kMax : QaRule::kVote;
  try {
    validate(p.rules);
  } catch (const std::invalid_argument& e) {
    throw FieldError(origin, field, e.what());
  }
  return p;
}

json to_json(const PartsSpec& p) {
  json j = {{"part_classes", p.rules.part_classes},
            {"defect_classes", p.rules.defect_classes},
            {"part_threshold", p.part_threshold},
            {"defect_threshold", p.rules.defect_threshold}};
  if (!p.classifier.empty()) j["classifier"] = p.classifier;
  return j;
}

PlcSpec parse_plc_spec(const json& j, const std::string& field, const std::string& origin,
                       bool parts) {
  PlcSpec s;
  s.settings = j;
  PlcSettingProblem p = apply_plc_json(j, s.options);
  if (p.why == "unknown setting")
    p.why =
        "unknown setting; the settings are those of the QA app's station file "
        "(torchinfer-qa-line --help-plc, docs/line-io.md)";
  if (p.why.empty()) p = finish_plc_options(s.options);
  if (!p.why.empty())
    throw FieldError(origin, p.setting.empty() ? field : field + "." + p.setting, p.why);
  if (!parts)
    throw FieldError(origin, field,
                     "needs \"parts\" on the stream: the part verdicts the PLC acts on");
  return s;
}

}  // namespace torchinfer::server
