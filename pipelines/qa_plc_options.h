// torchinfer-qa-line's PLC settings (--plc and friends, or --station FILE):
// taken out of argv before GLib parses the rest, so the QA app's own option
// table stays as it is. The station file holds the same settings under the
// flags' names (docs/line-io.md); flags given as well override it.
#pragma once

#include <string>

#include "lineio/belt_scheduler.h"
#include "lineio/modbus_output.h"

namespace torchinfer::qa {

struct PlcOptions {
  bool enabled = false;  // --plc (or a station file's "plc") was given
  ModbusOptions modbus;
  BeltCalibration calibration;
  EjectorConfig ejector;
  std::string direction = "+x";  // which image axis the belt runs along, and which way
  double belt_units_per_s = 0;   // without an encoder
  bool queue_mode = false;       // --plc-mode queue: the PLC's shift register fires
  std::string station;           // --station FILE, for messages
};

// Removes the PLC flags from argv (argc shrinks) into `o`; false after
// printing why when one is bad. --help-plc prints them and returns false
// with `help` set.
bool take_plc_args(int& argc, char** argv, PlcOptions& o, bool& help);

// The part's place along the belt in pixels, growing downstream.
double along_belt(const PlcOptions& o, double cx, double cy);

}  // namespace torchinfer::qa
