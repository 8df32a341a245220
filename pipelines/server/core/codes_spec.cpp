#include "server/core/codes_spec.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "codes/code_reader.h"
#include "common/field_error.h"

namespace torchinfer::server {

namespace {

using nlohmann::json;

const std::set<std::string> kFields{"enable",    "formats", "classes",         "padding",
                                    "budget_ms", "workers", "reread_interval", "full_frame"};

std::string plain(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double number(const json& j, const std::string& key, double lo, double hi, const std::string& field,
              const std::string& origin) {
  const json& v = j.at(key);
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
    throw FieldError(origin, field + "." + key,
                     "must be a number from " + plain(lo) + " to " + plain(hi));
  return v.get<double>();
}

int integer(const json& j, const std::string& key, int lo, int hi, const std::string& field,
            const std::string& origin) {
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw FieldError(origin, field + "." + key,
                     "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(v.get<long long>());
}

std::string text(const json& j, const std::string& key, const std::string& field,
                 const std::string& origin) {
  const json& v = j.at(key);
  const std::string s = v.is_string() ? v.get<std::string>() : std::string(1, '\x01');
  if (s.size() > 256 ||
      std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    throw FieldError(origin, field + "." + key,
                     "must be a string of at most 256 printable characters");
  return s;
}

std::vector<std::string> classes(const json& j, const std::string& field,
                                 const std::string& origin) {
  const json& v = j.at("classes");
  if (!v.is_array() || v.size() > 64)
    throw FieldError(origin, field + ".classes", "must be a list of at most 64 class labels");
  std::vector<std::string> out;
  for (const auto& c : v) {
    const std::string s = c.is_string() ? c.get<std::string>() : "";
    if (s.empty() || s.size() > 64 || s.find(',') != std::string::npos ||
        std::any_of(s.begin(), s.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
      throw FieldError(origin, field + ".classes",
                       "each class is a label of 1 to 64 printable characters without ','");
    out.push_back(s);
  }
  return out;
}

}  // namespace

CodesSpec parse_codes_spec(const json& j, const std::string& field, const std::string& origin) {
  if (!j.is_object()) throw FieldError(origin, field, "must be an object");
  for (const auto& [k, v] : j.items())
    if (!kFields.count(k)) {
      std::string list;
      for (const auto& n : kFields) list += (list.empty() ? "" : ", ") + n;
      throw FieldError(origin, field + "." + k, "unknown field; the fields are " + list);
    }
  CodesSpec c;
  if (j.contains("enable")) {
    if (!j.at("enable").is_boolean())
      throw FieldError(origin, field + ".enable", "must be true or false");
    c.enable = j.at("enable").get<bool>();
  }
  if (j.contains("formats")) {
    c.formats = text(j, "formats", field, origin);
    if (const std::string bad = check_code_formats(c.formats); !bad.empty())
      throw FieldError(origin, field + ".formats", bad);
  }
  if (j.contains("classes")) c.classes = classes(j, field, origin);
  if (j.contains("padding")) c.padding = number(j, "padding", 0, 1, field, origin);
  if (j.contains("budget_ms")) c.budget_ms = number(j, "budget_ms", 0, 10000, field, origin);
  if (j.contains("workers")) c.workers = integer(j, "workers", 0, 64, field, origin);
  if (j.contains("reread_interval"))
    c.reread_interval = integer(j, "reread_interval", 0, 1000000, field, origin);
  if (j.contains("full_frame")) {
    c.full_frame = text(j, "full_frame", field, origin);
    if (c.full_frame != "never" && c.full_frame != "no-roi" && c.full_frame != "always")
      throw FieldError(origin, field + ".full_frame", "give never, no-roi or always");
  }
  return c;
}

json to_json(const CodesSpec& c) {
  json j = {{"enable", c.enable}};
  if (!c.formats.empty()) j["formats"] = c.formats;
  if (!c.classes.empty()) j["classes"] = c.classes;
  if (c.padding) j["padding"] = *c.padding;
  if (c.budget_ms) j["budget_ms"] = *c.budget_ms;
  if (c.workers) j["workers"] = *c.workers;
  if (c.reread_interval) j["reread_interval"] = *c.reread_interval;
  if (!c.full_frame.empty()) j["full_frame"] = c.full_frame;
  return j;
}

}  // namespace torchinfer::server
