// The rules behind the Kubernetes-style probes of torchinfer-server
// (docs/server.md "Probes"): /livez (the main loop answers), /startupz
// (models loaded), /readyz (models loaded and every camera this shard runs
// is running or degraded, or has been starting/reconnecting/stalled for less
// than a grace period). Pure: the glue feeds it the cameras' states and a clock.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace torchinfer::server {

struct CameraState {
  std::string id, state;  // state as the REST API names it (stream_health.h)
};

// When each camera entered the state it is in, as seen by observe() (the
// glue calls it every second and before each /readyz, so a time is at most
// a second late). A camera that is gone is forgotten.
class StateClock {
 public:
  void observe(const std::vector<CameraState>& cameras, double now_s);
  // Seconds since `id` entered its current state; 0 if never observed.
  double age(const std::string& id, double now_s) const;

 private:
  struct Seen {
    std::string state;
    double since_s = 0;
  };
  std::map<std::string, Seen> seen_;
};

struct Readiness {
  bool ready = false;
  // One entry per reason: {"stream": id, "state": s, "for_s": age} or
  // {"reason": "..."} for the server as a whole.
  nlohmann::json reasons = nlohmann::json::array();
};

// `stopping` cameras (removed, still draining) do not count: they are on
// their way out. A server that drains (SIGTERM) is not ready.
Readiness evaluate_readiness(const std::vector<CameraState>& cameras, const StateClock& clock,
                             double now_s, double grace_s, bool models_loaded, bool draining);

}  // namespace torchinfer::server
