// A camera's lines and zones (torchanalytics after torchtrack): the "lines"
// and "zones" fields of a stream, and the body of PUT /streams/{id}/analytics.
// Each field is either torchanalytics' property syntax (a string,
// "gate:320,0,320,480;exit:...") or the JSON of its config file (an array of
// {"name", "points", "classes", "holes"} objects): both go through
// torchanalytics' own parser (analytics/analytics_config.h), so the element
// and the server accept exactly the same layouts. Coordinates are frame
// pixels. No GStreamer here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "analytics/analytics_config.h"

namespace torchinfer::server {

// `lines` and `zones` may be null (not given: none). Throws FieldError
// naming the field ("streams[0].lines", "zones") and the entry.
AnalyticsConfig parse_analytics_fields(const nlohmann::json* lines, const nlohmann::json* zones,
                                       const std::string& prefix, const std::string& origin);

// PUT /streams/{id}/analytics: {"lines": ..., "zones": ...}, nothing else. A
// field left out means none of that kind: the body is the whole new layout.
AnalyticsConfig parse_analytics_body(const nlohmann::json& body);

// The layout in the JSON schema above (what torchanalytics' config file
// reads): {"normalized": false, "lines": [...], "zones": [...]}.
nlohmann::json layout_json(const AnalyticsConfig& c);

// The counts in the shape of torchmetaconvert's per-frame "analytics"
// object (docs/elements.md): {"lines": {NAME: {forward, backward, by_class:
// {LABEL: {forward, backward}}}}, "zones": {NAME: {inside, entered, exited}}}.
nlohmann::json counts_json(const std::vector<LineCounts>& lines,
                           const std::vector<ZoneCounts>& zones);

}  // namespace torchinfer::server
