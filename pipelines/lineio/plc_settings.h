// A station's PLC settings (docs/line-io.md): the PLC's address, register
// map, encoder, belt calibration and ejector, by the names the QA app's
// flags and station file use ("plc", "plc-encoder", "ejector-distance"...).
// One parser for every user of them: torchinfer-qa-line's flags and
// --station file (pipelines/qa/qa_plc_options.h) and torchinfer-server's
// per-camera "plc" object (pipelines/server/core/line_spec.h). Returns problems, never
// prints; the caller names the file or field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "lineio/belt_scheduler.h"
#include "lineio/modbus_output.h"

namespace torchinfer {

struct PlcOptions {
  bool enabled = false;  // "plc" (modbus://HOST:PORT) was given
  ModbusOptions modbus;
  BeltCalibration calibration;
  EjectorConfig ejector;
  std::string direction = "+x";  // which image axis the belt runs along, and which way
  double belt_units_per_s = 0;   // without an encoder
  bool queue_mode = false;       // plc-mode queue: the PLC's shift register fires
  std::string station;           // --station FILE, for messages
};

// A setting that cannot be used: its name and why (the value's problem).
struct PlcSettingProblem {
  std::string setting, why;
};

// Every setting's name and help line, sorted by name.
std::vector<std::pair<std::string, std::string>> plc_setting_help();
bool is_plc_setting(const std::string& name);

// One setting from its text (a flag's value); empty when it was set, the
// problem otherwise ("'abc': give a number from 1 to 10000").
std::string set_plc_setting(PlcOptions& o, const std::string& name, const std::string& text);

// A JSON object of settings (a station file, a camera's "plc"): each key a
// setting, each value a number, string or boolean. The first problem, or an
// empty setting and why when `j` is not an object; nullopt-like empty
// problem (setting and why empty) when all were set.
PlcSettingProblem apply_plc_json(const nlohmann::json& j, PlcOptions& o);

// The settings together, once all are given: what the scheduler and the
// output cannot run with (no ejector distance, no belt travel, a register
// map that does not fit), naming the setting to give. Fills what follows
// from the others (the belt's speed in counts, queue and recheck outputs).
PlcSettingProblem finish_plc_options(PlcOptions& o);

// The part's place along the belt in pixels, growing downstream.
double along_belt(const PlcOptions& o, double cx, double cy);

}  // namespace torchinfer
