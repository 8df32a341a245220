#include "server/core/probes.h"

#include <set>

namespace torchinfer::server {

void StateClock::observe(const std::vector<CameraState>& cameras, double now_s) {
  std::set<std::string> present;
  for (const auto& c : cameras) {
    if (c.state == "stopping") continue;  // a removed camera whose id may come back
    present.insert(c.id);
    auto it = seen_.find(c.id);
    if (it == seen_.end() || it->second.state != c.state) seen_[c.id] = {c.state, now_s};
  }
  for (auto it = seen_.begin(); it != seen_.end();)
    it = present.count(it->first) ? std::next(it) : seen_.erase(it);
}

double StateClock::age(const std::string& id, double now_s) const {
  auto it = seen_.find(id);
  return it == seen_.end() ? 0 : now_s - it->second.since_s;
}

Readiness evaluate_readiness(const std::vector<CameraState>& cameras, const StateClock& clock,
                             double now_s, double grace_s, bool models_loaded, bool draining) {
  Readiness r;
  if (!models_loaded) r.reasons.push_back({{"reason", "models are not loaded yet"}});
  if (draining) r.reasons.push_back({{"reason", "draining (SIGTERM): the server is stopping"}});
  for (const auto& c : cameras) {
    // degraded: frames still arrive, the loss is the network's; the alert
    // says it (deploy/prometheus), another box would not do better.
    if (c.state == "running" || c.state == "degraded" || c.state == "stopping") continue;
    const double age = clock.age(c.id, now_s);
    // stalled: connected, no complete frame; given the same grace.
    const bool waiting = c.state == "starting" || c.state == "reconnecting" || c.state == "stalled";
    if (waiting && age < grace_s) continue;
    nlohmann::json why = {{"stream", c.id}, {"state", c.state}, {"for_s", age}};
    if (waiting) why["grace_s"] = grace_s;
    r.reasons.push_back(why);
  }
  r.ready = r.reasons.empty();
  return r;
}

}  // namespace torchinfer::server
