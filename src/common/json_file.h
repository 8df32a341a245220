// The one way the project reads JSON (sidecars, truth files, configuration,
// request bodies). nlohmann's own limits are none: a 200 kB file nested
// 100k levels deep overflows the stack of anything that walks the result
// recursively (dump, copy, comparison), so depth and size are bounded here,
// while parsing, before any such tree exists.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace torchinfer {

// Deeper than any real sidecar or config (they nest 2-3 levels).
constexpr int kMaxJsonDepth = 64;
// Far above any sidecar or truth file (the demo's largest is 140 kB).
constexpr std::size_t kMaxJsonFileBytes = 16u << 20;

// Parses `text`; `origin` names where it came from in errors (a path, "REST
// body"). Throws Error(kConfigInvalid) "<origin>: not valid JSON (...)" or
// "<origin>: nested deeper than 64 levels", never an nlohmann exception.
nlohmann::json parse_json(const std::string& text, const std::string& origin,
                          int max_depth = kMaxJsonDepth);

// Reads a regular file (never blocks on a FIFO; Error(kNotFound) as
// open_regular_file) of at most `max_bytes` and parses it as above. `what`
// says what the file is for ("model config", "truth file").
nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes = kMaxJsonFileBytes,
                              int max_depth = kMaxJsonDepth);

}  // namespace torchinfer
