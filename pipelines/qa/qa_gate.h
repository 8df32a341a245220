// torchinfer-qa-line --gate x1,y1,x2,y2: the gate line the parts are decided
// at (pipelines/parts/core/part_verdicts.h, QaRules::at_gate), counted by torchanalytics
// (element "gate", one line named "gate", reference point the box centre).
// Crossing from the left to the right of the direction P1 -> P2 is
// "forward" (docs/elements.md, torchanalytics).
#pragma once

#include <gst/gst.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

constexpr const char* kGateElement = "gate";
constexpr const char* kGateLine = "gate";

struct Gate {
  Point2 p1, p2;
};

// Empty when `text` is a gate (four numbers >= 0, two distinct points, with
// torchanalytics' own parser), else why not; the message names --gate.
std::string parse_gate(const std::string& text, Gate* gate);
// Empty when both ends lie in a width x height frame, else why not.
std::string gate_outside(const Gate& g, int width, int height);
// torchanalytics' `lines` value.
std::string gate_lines(const Gate& g);

// What the gate counted, read from torchanalytics' meta on each frame.
struct GateCounts {
  std::map<std::string, DirectionCounts> by_class;             // the part classes only
  std::map<std::string, std::map<std::string, int>> verdicts;  // direction -> verdict -> parts
};

// The crossings of the gate by tracks of a part class on this frame; the
// line's per-class counts so far into `counts` (part classes only).
std::vector<QaCrossing> read_gate(GstBuffer* buf, const std::set<std::string>& part_classes,
                                  GateCounts& counts);

// The summary's "gate" object.
nlohmann::ordered_json gate_json(const Gate& g, const GateCounts& c, int not_at_gate);

}  // namespace torchinfer::qa
