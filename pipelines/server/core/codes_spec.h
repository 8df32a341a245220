// A camera's "codes" setting (docs/server.md, "Codes"): torchcodes after
// the camera's tracking (or its torchnms), reading DataMatrix / QR / 1D
// codes inside the detections of chosen classes, or over the whole frame.
// The fields mirror torchcodes' properties (docs/elements.md); unset ones
// keep the element's defaults. Checked field by field. No GStreamer here.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace torchinfer::server {

struct CodesSpec {
  bool enable = true;
  std::string formats;               // torchcodes "formats"; empty: all
  std::vector<std::string> classes;  // "object-class"; empty: every detection
  std::optional<double> padding;     // 0..1
  std::optional<double> budget_ms;   // 0..10000 (with workers)
  std::optional<int> workers;        // 0..64
  std::optional<int> reread_interval;
  std::string full_frame;  // "never", "no-roi", "always"; empty: the element's
};

// `j` is the stream's "codes" at field path `field`. Throws FieldError.
CodesSpec parse_codes_spec(const nlohmann::json& j, const std::string& field,
                           const std::string& origin);
nlohmann::json to_json(const CodesSpec& c);

}  // namespace torchinfer::server
