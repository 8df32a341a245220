#include "qa_plc_options.h"

#include <gst/gst.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "common/json_file.h"

namespace torchinfer::qa {

namespace {

// A station file is a few hundred bytes; anything far larger is not one.
constexpr std::size_t kMaxStationBytes = 64 * 1024;

using Setter = std::function<std::string(PlcOptions&, const std::string&)>;

struct Setting {
  const char* help;
  Setter set;
};

std::string shortest(double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%g", v);
  return buf;
}

// Empty when `text` is a number in [lo, hi]; the message otherwise.
std::string number(const std::string& text, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = g_ascii_strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
    return "'" + text + "': give a number from " + shortest(lo) + " to " + shortest(hi);
  *out = v;
  return {};
}

Setter integer(int ModbusRegisterMap::*field, int lo) {
  return [field, lo](PlcOptions& o, const std::string& t) {
    double v = 0;
    std::string why = number(t, lo, 65535, &v);
    if (why.empty() && v != std::floor(v)) why = "'" + t + "': give a whole number";
    if (why.empty()) o.modbus.map.*field = static_cast<int>(v);
    return why;
  };
}

Setter millis(std::int64_t ModbusRegisterMap::*field) {
  return [field](PlcOptions& o, const std::string& t) {
    double v = 0;
    std::string why = number(t, 1, 10000, &v);
    if (why.empty()) o.modbus.map.*field = static_cast<std::int64_t>(v * 1e6);
    return why;
  };
}

Setter real(double lo, double hi, std::function<void(PlcOptions&, double)> put) {
  return [lo, hi, put](PlcOptions& o, const std::string& t) {
    double v = 0;
    std::string why = number(t, lo, hi, &v);
    if (why.empty()) put(o, v);
    return why;
  };
}

Setter choice(std::vector<std::string> allowed,
              std::function<void(PlcOptions&, const std::string&)> put) {
  return [allowed, put](PlcOptions& o, const std::string& t) -> std::string {
    for (const auto& a : allowed)
      if (t == a) return put(o, t), std::string();
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return "'" + t + "': give one of " + list;
  };
}

std::string set_url(PlcOptions& o, const std::string& t) {
  std::string why;
  if (!parse_modbus_url(t, o.modbus.host, o.modbus.port, o.modbus.map.unit, why)) return why;
  o.enabled = true;
  return {};
}

using Table = std::map<std::string, Setting>;

// The PLC: connection, register map, encoder, mode.
void add_plc_settings(Table& s) {
  using M = ModbusRegisterMap;
  s.insert({
      {"plc", {"the PLC: modbus://HOST:PORT[?unit=N]", set_url}},
      {"plc-reject-coil",
       {"coil pulsed for a rejected part (default 0)", integer(&M::reject_coil, 0)}},
      {"plc-pass-coil",
       {"coil pulsed for a passed part, -1 none (default 1)", integer(&M::pass_coil, -1)}},
      {"plc-recheck-coil",
       {"coil for late parts, -1: the reject coil (default -1)", integer(&M::recheck_coil, -1)}},
      {"plc-pulse-ms", {"pulse width (default 50)", millis(&M::pulse_ns)}},
      {"plc-part-registers",
       {"first of the 11 holding registers of the last part, -1 none (default 0)",
        integer(&M::part_base, -1)}},
      {"plc-heartbeat",
       {"holding register counted up every heartbeat, -1 none (default 20)",
        integer(&M::heartbeat, -1)}},
      {"plc-heartbeat-ms", {"heartbeat period (default 1000)", millis(&M::heartbeat_ns)}},
      {"plc-encoder",
       {"register of the belt encoder, -1 none: --belt-speed (default -1)",
        integer(&M::encoder_register, -1)}},
      {"plc-encoder-type",
       {"input (function 4, default) or holding (3)",
        choice({"input", "holding"},
               [](PlcOptions& o, const std::string& t) {
                 o.modbus.map.encoder_input = t == "input";
               })}},
      {"plc-encoder-bits",
       {"16 (default) or 32 (two registers, high word first)",
        choice({"16", "32"},
               [](PlcOptions& o, const std::string& t) {
                 o.modbus.map.encoder_bits = std::atoi(t.c_str());
               })}},
      {"plc-realtime-priority",
       {"1..99: the output's thread runs SCHED_FIFO at this priority (needs CAP_SYS_NICE); 0 "
        "(default): as any thread",
        [](PlcOptions& o, const std::string& t) {
          double v = 0;
          std::string why = number(t, 0, 99, &v);
          if (why.empty()) o.modbus.realtime_priority = static_cast<int>(v);
          return why;
        }}},
      {"plc-encoder-poll-ms", {"encoder poll period (default 5)", millis(&M::encoder_poll_ns)}},
      {"plc-mode",
       {"fire: the app pulses at the moment (default); queue: the PLC's shift register fires",
        choice({"fire", "queue"},
               [](PlcOptions& o, const std::string& t) { o.queue_mode = t == "queue"; })}},
      {"plc-queue",
       {"first holding register of the part queue (queue mode; default 100)",
        integer(&M::queue_base, 0)}},
      {"plc-queue-slots",
       {"entries in the part queue, 1..1024 (default 16)", integer(&M::queue_slots, 1)}},
  });
}

// The belt and the ejector: calibration, speed, distance, lead, late parts.
void add_belt_settings(Table& s) {
  s.insert({
      {"belt-units-per-px",
       {"belt units (e.g. mm) per pixel along the belt (default 1)",
        real(1e-6, 1e6, [](PlcOptions& o, double v) { o.calibration.units_per_px = v; })}},
      {"belt-ref-px",
       {"the reference line, pixels along the belt's direction (default 0)",
        real(-1e6, 1e6, [](PlcOptions& o, double v) { o.calibration.ref_px = v; })}},
      {"belt-direction",
       {"+x (default), -x, +y or -y: where the belt carries parts in the image",
        choice({"+x", "-x", "+y", "-y"},
               [](PlcOptions& o, const std::string& t) { o.direction = t; })}},
      {"belt-counts-per-unit",
       {"encoder counts per belt unit (default 1)",
        real(1e-6, 1e6, [](PlcOptions& o, double v) { o.calibration.counts_per_unit = v; })}},
      {"belt-speed",
       {"belt units per second, without an encoder",
        real(1e-6, 1e9, [](PlcOptions& o, double v) { o.belt_units_per_s = v; })}},
      {"ejector-distance",
       {"reference line -> ejector, belt units (required)",
        real(1e-6, 1e9, [](PlcOptions& o, double v) { o.ejector.distance_units = v; })}},
      {"ejector-lead-ms",
       {"the actuator's lead: the output goes out this early (default 0)",
        real(0, 10000,
             [](PlcOptions& o, double v) {
               o.ejector.lead_ns = static_cast<std::int64_t>(v * 1e6);
             })}},
      {"reject-late",
       {"true (default): a late part gets the recheck/reject output at once; false: nothing",
        choice({"true", "false"},
               [](PlcOptions& o, const std::string& t) { o.ejector.reject_late = t == "true"; })}},
  });
}

const Table& settings() {
  static const Table s = [] {
    Table t;
    add_plc_settings(t);
    add_belt_settings(t);
    return t;
  }();
  return s;
}

void print_help() {
  g_print("PLC output of torchinfer-qa-line (docs/line-io.md):\n");
  g_print("  --station FILE  a JSON object of the settings below, by name without '--'\n");
  for (const auto& [name, s] : settings()) g_print("  --%s  %s\n", name.c_str(), s.help);
}

// A station file's value as the text a flag would give.
std::string as_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return nlohmann::json(v.get<double>()).dump();
  return "\x01";  // matches no setting's accepted text
}

bool read_station(const std::string& path, PlcOptions& o) {
  nlohmann::json j;
  try {
    j = read_json_file(path, "station file", kMaxStationBytes);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  if (!j.is_object()) {
    g_printerr("qa-line: station file %s: give a JSON object of settings (docs/line-io.md)\n",
               path.c_str());
    return false;
  }
  for (const auto& [key, value] : j.items()) {
    auto it = settings().find(key);
    if (it == settings().end()) {
      g_printerr("qa-line: station file %s: unknown setting '%s' (qa-line --help-plc lists them)\n",
                 path.c_str(), key.c_str());
      return false;
    }
    const std::string why = it->second.set(o, as_text(value));
    if (!why.empty()) {
      g_printerr("qa-line: station file %s: \"%s\" %s\n", path.c_str(), key.c_str(),
                 value.is_primitive() ? why.c_str() : "must be a number, string or boolean");
      return false;
    }
  }
  o.station = path;
  return true;
}

// The settings together: what the scheduler and the output cannot run with.
bool check(PlcOptions& o, bool any_given) {
  if (!o.enabled) {
    if (any_given) g_printerr("qa-line: the PLC settings need --plc modbus://HOST:PORT\n");
    return !any_given;
  }
  if (o.ejector.distance_units <= 0) {
    g_printerr("qa-line: --plc needs --ejector-distance (belt units from the reference line)\n");
    return false;
  }
  auto& map = o.modbus.map;
  if (map.encoder_register < 0 && o.belt_units_per_s <= 0) {
    g_printerr("qa-line: --plc needs the belt's travel: --plc-encoder REGISTER or --belt-speed\n");
    return false;
  }
  if (o.queue_mode && map.queue_base < 0) map.queue_base = 100;
  if (!o.queue_mode) map.queue_base = -1;
  o.modbus.belt_counts_per_s = o.belt_units_per_s * o.calibration.counts_per_unit;
  o.ejector.has_recheck = map.recheck_coil >= 0;
  o.ejector.pass_pulses = map.pass_coil >= 0;
  if (const std::string why = check_register_map(map); !why.empty()) {
    g_printerr("qa-line: PLC register map: %s\n", why.c_str());
    return false;
  }
  return true;
}

}  // namespace

double along_belt(const PlcOptions& o, double cx, double cy) {
  if (o.direction == "-x") return -cx;
  if (o.direction == "+y") return cy;
  if (o.direction == "-y") return -cy;
  return cx;
}

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
    if (name != "station" && !settings().count(name)) {
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
    if (const std::string why = settings().at(name).set(o, value); !why.empty()) {
      g_printerr("qa-line: --%s %s\n", name.c_str(), why.c_str());
      return false;
    }
  return check(o, !given.empty() || !station.empty());
}

}  // namespace torchinfer::qa
