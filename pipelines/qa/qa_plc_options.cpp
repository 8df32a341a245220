#include "qa/qa_plc_options.h"

#include <gst/gst.h>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/json_file.h"

namespace torchinfer::qa {

namespace {

// A station file is a few hundred bytes; anything far larger is not one.
constexpr std::size_t kMaxStationBytes = 64 * 1024;

void print_help() {
  g_print("PLC output of torchinfer-qa-line (docs/line-io.md):\n");
  g_print("  --station FILE  a JSON object of the settings below, by name without '--'\n");
  for (const auto& [name, help] : plc_setting_help())
    g_print("  --%s  %s\n", name.c_str(), help.c_str());
}

bool read_station(const std::string& path, PlcOptions& o) {
  nlohmann::json j;
  try {
    j = read_json_file(path, "station file", kMaxStationBytes);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  const PlcSettingProblem p = apply_plc_json(j, o);
  if (p.why.empty()) {
    o.station = path;
    return true;
  }
  if (p.setting.empty())
    g_printerr("qa-line: station file %s: %s\n", path.c_str(), p.why.c_str());
  else if (p.why == "unknown setting")
    g_printerr("qa-line: station file %s: unknown setting '%s' (qa-line --help-plc lists them)\n",
               path.c_str(), p.setting.c_str());
  else
    g_printerr("qa-line: station file %s: \"%s\" %s\n", path.c_str(), p.setting.c_str(),
               p.why.c_str());
  return false;
}

// The settings together: what the scheduler and the output cannot run with.
bool check(PlcOptions& o, bool any_given) {
  if (!o.enabled) {
    if (any_given) g_printerr("qa-line: the PLC settings need --plc modbus://HOST:PORT\n");
    return !any_given;
  }
  const PlcSettingProblem p = finish_plc_options(o);
  if (p.why.empty()) return true;
  g_printerr("qa-line: --plc: --%s %s\n", p.setting.c_str(), p.why.c_str());
  return false;
}

}  // namespace

bool take_plc_args(int& argc, char** argv, PlcOptions& o, bool& help) {
  help = false;
  std::vector<std::pair<std::string, std::string>> given;
  std::string station;
  int out = 1;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help-plc") {
      help = true;
      continue;
    }
    const std::string name = a.rfind("--", 0) == 0 ? a.substr(2, a.find('=') - 2) : "";
    if (name != "station" && !is_plc_setting(name)) {
      argv[out++] = argv[i];
      continue;
    }
    std::string value;
    if (a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      g_printerr("qa-line: --%s needs a value\n", name.c_str());
      return false;
    }
    if (name == "station")
      station = value;
    else
      given.emplace_back(name, value);
  }
  argc = out;
  argv[argc] = nullptr;
  if (help) return print_help(), false;
  if (!station.empty() && !read_station(station, o)) return false;
  for (const auto& [name, value] : given)
    if (const std::string why = set_plc_setting(o, name, value); !why.empty()) {
      g_printerr("qa-line: --%s %s\n", name.c_str(), why.c_str());
      return false;
    }
  return check(o, !given.empty() || !station.empty());
}

}  // namespace torchinfer::qa
