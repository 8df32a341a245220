#include "parts/core/decision_json.h"

#include <nlohmann/json.hpp>

namespace torchinfer {

namespace {

nlohmann::json pts_or_null(std::int64_t pts) {
  return pts < 0 ? nlohmann::json(nullptr) : nlohmann::json(pts);
}

nlohmann::ordered_json box_json(const Box& b) {
  return {{"x_min", b.x_min}, {"y_min", b.y_min}, {"x_max", b.x_max}, {"y_max", b.y_max}};
}

// The part's anomaly verdict; its median view's map peak and regions (frame
// pixels of frame `view.frame`) show where the part looks wrong.
nlohmann::ordered_json anomaly_json(const QaAnomalyVerdict& a) {
  nlohmann::ordered_json j;
  j["score"] = a.score;
  j["anomalous"] = a.anomalous;
  j["threshold"] = a.threshold;
  j["views"] = a.views;
  j["view_scores"] = a.view_scores;
  auto& v = j["view"];
  v["frame"] = a.view_frame;
  v["score"] = a.view.score;
  v["peak"] = a.view.peak_x < 0
                  ? nlohmann::ordered_json(nullptr)
                  : nlohmann::ordered_json{{"x", a.view.peak_x}, {"y", a.view.peak_y}};
  auto& regions = v["regions"] = nlohmann::ordered_json::array();
  for (const Box& b : a.view.regions) regions.push_back(box_json(b));
  return j;
}

// The part's code, null when none was read.
nlohmann::ordered_json code_json(const std::optional<QaCode>& c) {
  if (!c) return nullptr;
  return {{"format", c->format}, {"text", c->text}};
}

}  // namespace

std::string decision_json(const QaDecision& d, const nlohmann::ordered_json& files, bool codes) {
  nlohmann::ordered_json j;
  j["event"] = "part";
  j["part"] = d.part;
  j["class"] = d.label;
  j["verdict"] = verdict_name(d.verdict);
  j["reason"] = d.reason;
  if (!d.direction.empty()) j["direction"] = d.direction;  // decided at the gate
  auto& defects = j["defects"] = nlohmann::ordered_json::array();
  for (const auto& [label, c] : d.defects)
    defects.push_back({{"class", label}, {label == "defect_area" ? "area_mm2" : "confidence", c}});
  auto& e = j["evidence"];
  e["rule"] = rule_name(d.rule);
  e["frames_judged"] = d.frames_judged;
  e["top"] = d.top.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.top);
  e["confidence"] = d.top_score;
  e["scores"] = nlohmann::ordered_json::object();
  for (const auto& [label, s] : d.scores) e["scores"][label] = s;
  if (!d.defect_area_mm2.empty()) e["defect_area_mm2"] = d.defect_area_mm2;
  if (files.is_object())
    for (const auto& [k, v] : files.items()) e[k] = v;
  if (d.anomaly) j["anomaly"] = anomaly_json(*d.anomaly);
  if (codes) j["code"] = code_json(d.code);
  j["first_pts"] = pts_or_null(d.first_pts);
  j["last_pts"] = pts_or_null(d.last_pts);
  j["first_frame"] = d.first_frame;
  j["last_frame"] = d.last_frame;
  j["frames_seen"] = d.frames_seen;
  j["frames_whole"] = d.frames_whole;
  return j.dump();
}

std::string summary_json(const QaCounts& c, const QaRunInfo& run,
                         const nlohmann::ordered_json& extra) {
  nlohmann::ordered_json j;
  j["event"] = "summary";
  j["passed"] = c.passed;
  j["rejected"] = c.rejected;
  j["incomplete"] = c.incomplete;
  j["duplicates"] = c.duplicates;
  j["rejected_by_defect"] = nlohmann::ordered_json::object();
  for (const auto& [label, n] : c.rejected_by_defect) j["rejected_by_defect"][label] = n;
  j["frames"] = run.frames;
  j["frames_inferred"] = run.frames_inferred;
  j["interrupted"] = run.interrupted;
  if (extra.is_object())
    for (const auto& [k, v] : extra.items()) j[k] = v;
  return j.dump();
}

}  // namespace torchinfer
