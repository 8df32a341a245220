#include "qa/decision_json.h"

#include <nlohmann/json.hpp>

namespace torchinfer {

namespace {

nlohmann::json pts_or_null(std::int64_t pts) {
  return pts < 0 ? nlohmann::json(nullptr) : nlohmann::json(pts);
}

}  // namespace

std::string decision_json(const QaDecision& d, double defect_threshold) {
  nlohmann::ordered_json j;
  j["event"] = "part";
  j["part"] = d.part;
  j["class"] = d.label;
  j["verdict"] = verdict_name(d.verdict);
  auto& defects = j["defects"] = nlohmann::ordered_json::array();
  for (const auto& [label, c] : d.defects(defect_threshold))
    defects.push_back({{"class", label}, {"confidence", c}});
  j["max_confidence"] = nlohmann::ordered_json::object();
  for (const auto& [label, c] : d.max_defect) j["max_confidence"][label] = c;
  j["first_pts"] = pts_or_null(d.first_pts);
  j["last_pts"] = pts_or_null(d.last_pts);
  j["first_frame"] = d.first_frame;
  j["last_frame"] = d.last_frame;
  j["frames_seen"] = d.frames_seen;
  j["frames_whole"] = d.frames_whole;
  return j.dump();
}

std::string summary_json(const QaCounts& c, const QaRunInfo& run) {
  nlohmann::ordered_json j;
  j["event"] = "summary";
  j["passed"] = c.passed;
  j["rejected"] = c.rejected;
  j["incomplete"] = c.incomplete;
  j["spurious"] = c.spurious;
  j["rejected_by_defect"] = nlohmann::ordered_json::object();
  for (const auto& [label, n] : c.rejected_by_defect) j["rejected_by_defect"][label] = n;
  j["frames"] = run.frames;
  j["frames_inferred"] = run.frames_inferred;
  j["interrupted"] = run.interrupted;
  return j.dump();
}

}  // namespace torchinfer
