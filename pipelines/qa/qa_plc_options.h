// torchinfer-qa-line's PLC settings (--plc and friends, or --station FILE):
// taken out of argv before GLib parses the rest, so the QA app's own option
// table stays as it is. The station file holds the same settings under the
// flags' names (docs/line-io.md); flags given as well override it. The
// settings themselves are lineio/plc_settings.h's, shared with
// torchinfer-server's per-camera "plc".
#pragma once

#include <string>

#include "lineio/plc_settings.h"

namespace torchinfer::qa {

using torchinfer::along_belt;
using torchinfer::PlcOptions;

// Removes the PLC flags from argv (argc shrinks) into `o`; false after
// printing why when one is bad. --help-plc prints them and returns false
// with `help` set.
bool take_plc_args(int& argc, char** argv, PlcOptions& o, bool& help);

}  // namespace torchinfer::qa
