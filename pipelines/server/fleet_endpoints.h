// What torchinfer-server needs to run as one of many (docs/deployment.md
// "Many boxes"): the probes /livez, /readyz and /startupz, GET /shard, the
// shard check on POST /streams, and the shard label on /metrics. The rules
// are in pipelines/server/core/shard.h and probes.h; this is their glue to ServerApp.
#pragma once

#include <glib.h>

#include <optional>
#include <string>
#include <vector>

#include "server/core/probes.h"
#include "server/core/server_config.h"
#include "server/core/shard.h"
#include "server/core/shard_plan.h"
#include "server_app.h"

namespace torchinfer::server {

// The shard from the command line and the config (server/shard.h's
// order); the host name is $HOSTNAME (a container's pod name) or, unset,
// the system's. Throws Error naming the flag or field.
ShardSpec shard_of_this_box(ShardSources from, const ServerConfig& config);

// Keeps the cameras of `config` that `shard` owns (server/shard_plan.h);
// their ids, in config order, go to *owned. The plan of the whole list.
ShardPlan keep_own_streams(ServerConfig& config, const ShardSpec& shard,
                           std::vector<std::string>* owned);

class FleetEndpoints {
 public:
  // Watches the cameras' states every second (for /readyz's grace period)
  // until destroyed. Construct once the models are loaded.
  FleetEndpoints(ServerApp* app, ShardSpec shard, ShardPlan plan, std::vector<std::string> owned);
  ~FleetEndpoints();
  FleetEndpoints(const FleetEndpoints&) = delete;
  FleetEndpoints& operator=(const FleetEndpoints&) = delete;

  // The resources served here (GET only): livez, readyz, startupz, shard.
  static bool serves(const std::string& resource);
  Reply get(const std::string& resource);
  // POST /streams: the refusal (421 for another shard's camera, 400 for a
  // bad "pin"), or nullopt to go on with *body, "pin" taken out of it.
  std::optional<Reply> gate_add(std::string* body) const;
  // /metrics with shard="K" on every sample, torchinfer_shards (N) and
  // torchinfer_shard_camera_list (the list's hash), when sharded.
  std::string label_metrics(const std::string& text) const;
  // SIGTERM: /readyz answers 503 from now on.
  void set_draining() { draining_ = true; }

 private:
  static gboolean on_tick(gpointer self);
  std::vector<CameraState> states() const;
  Reply readyz();
  Reply shard_reply() const;

  ServerApp* app_;
  ShardSpec shard_;
  ShardPlan plan_;
  std::vector<std::string> owned_;
  StateClock clock_;
  bool draining_ = false;
  guint timer_ = 0;
};

}  // namespace torchinfer::server
