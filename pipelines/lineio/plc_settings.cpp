#include "lineio/plc_settings.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <system_error>

namespace torchinfer {

namespace {

using Setter = std::function<std::string(PlcOptions&, const std::string&)>;

struct Setting {
  const char* help;
  Setter set;
};

std::string shortest(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Empty when `text` is a number in [lo, hi]; the message otherwise.
std::string number(const std::string& text, double lo, double hi, double* out) {
  // from_chars: the C locale's number whatever the process's locale is.
  double v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(v) || v < lo || v > hi)
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

// A JSON value as the text a flag would give.
std::string as_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return nlohmann::json(v.get<double>()).dump();
  return "\x01";  // matches no setting's accepted text
}

}  // namespace

std::vector<std::pair<std::string, std::string>> plc_setting_help() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, s] : settings()) out.emplace_back(name, s.help);
  return out;
}

bool is_plc_setting(const std::string& name) {
  return settings().count(name) > 0;
}

std::string set_plc_setting(PlcOptions& o, const std::string& name, const std::string& text) {
  auto it = settings().find(name);
  if (it == settings().end()) return "unknown setting '" + name + "'";
  return it->second.set(o, text);
}

PlcSettingProblem apply_plc_json(const nlohmann::json& j, PlcOptions& o) {
  if (!j.is_object()) return {"", "give a JSON object of settings (docs/line-io.md)"};
  for (const auto& [key, value] : j.items()) {
    if (!is_plc_setting(key)) return {key, "unknown setting"};
    if (!value.is_primitive() || value.is_null())
      return {key, "must be a number, string or boolean"};
    if (std::string why = set_plc_setting(o, key, as_text(value)); !why.empty()) return {key, why};
  }
  return {};
}

PlcSettingProblem finish_plc_options(PlcOptions& o) {
  if (!o.enabled) return {"plc", "needed: the PLC as modbus://HOST:PORT[?unit=N]"};
  if (o.ejector.distance_units <= 0)
    return {"ejector-distance", "needed: belt units from the reference line to the ejector"};
  auto& map = o.modbus.map;
  if (map.encoder_register < 0 && o.belt_units_per_s <= 0)
    return {"belt-speed", "needed for the belt's travel, or plc-encoder REGISTER"};
  if (o.queue_mode && map.queue_base < 0) map.queue_base = 100;
  if (!o.queue_mode) map.queue_base = -1;
  o.modbus.belt_counts_per_s = o.belt_units_per_s * o.calibration.counts_per_unit;
  o.ejector.has_recheck = map.recheck_coil >= 0;
  o.ejector.pass_pulses = map.pass_coil >= 0;
  if (const std::string why = check_register_map(map); !why.empty())
    return {"plc", "register map: " + why};
  return {};
}

double along_belt(const PlcOptions& o, double cx, double cy) {
  if (o.direction == "-x") return -cx;
  if (o.direction == "+y") return cy;
  if (o.direction == "-y") return -cy;
  return cx;
}

}  // namespace torchinfer
