#include "fleet_endpoints.h"

#include <algorithm>

#include "common/json_file.h"
#include "common/utf8.h"

namespace torchinfer::server {

using nlohmann::json;

ShardSpec shard_of_this_box(ShardSources from, const ServerConfig& config) {
  from.config_shard = config.shard;
  from.config_count = config.shards;
  const char* host = g_getenv("HOSTNAME");
  from.hostname = host && *host ? host : g_get_host_name();
  return resolve_shard(from);
}

ShardPlan keep_own_streams(ServerConfig& config, const ShardSpec& shard,
                           std::vector<std::string>* owned) {
  std::vector<std::string> ids;
  for (const auto& s : config.streams) ids.push_back(s.id);
  ShardPlan plan(ids, shard.count);
  std::vector<StreamSpec> mine;
  for (auto& s : config.streams)
    if (plan.owner(s.id) == shard.index) {
      owned->push_back(s.id);
      mine.push_back(std::move(s));
    }
  config.streams = std::move(mine);
  return plan;
}

FleetEndpoints::FleetEndpoints(ServerApp* app, ShardSpec shard, ShardPlan plan,
                               std::vector<std::string> owned)
    : app_(app), shard_(shard), plan_(std::move(plan)), owned_(std::move(owned)) {
  timer_ = g_timeout_add_seconds(1, on_tick, this);
}

FleetEndpoints::~FleetEndpoints() {
  if (timer_) g_source_remove(timer_);
}

gboolean FleetEndpoints::on_tick(gpointer self) {
  auto* f = static_cast<FleetEndpoints*>(self);
  // Exceptions stop here: GLib is C. A missed sample only delays a grace
  // period by a second (the next sample or /readyz catches up).
  try {
    f->clock_.observe(f->states(), g_get_monotonic_time() / 1e6);
  } catch (const std::exception& e) {
    g_printerr("torchinfer-server: warning: the cameras' states were not sampled: %s\n", e.what());
  }
  return G_SOURCE_CONTINUE;
}

std::vector<CameraState> FleetEndpoints::states() const {
  std::vector<CameraState> out;
  const Reply r = app_->list_streams();
  for (const auto& s : r.body.at("streams"))
    out.push_back({s.value("id", ""), s.value("state", "")});
  return out;
}

bool FleetEndpoints::serves(const std::string& resource) {
  return resource == "livez" || resource == "readyz" || resource == "startupz" ||
         resource == "shard";
}

Reply FleetEndpoints::get(const std::string& resource) {
  // Answered on the main loop: that it answers is what /livez checks.
  if (resource == "livez") return {200, {{"status", "alive"}}};
  if (resource == "readyz") return readyz();
  if (resource == "shard") return shard_reply();
  // The API listens only once every model has loaded (main.cpp), so a
  // server that answers has them: the startup probe fails (refused) until
  // then.
  const Reply listed = app_->list_models();
  json models = json::array();
  for (const auto& m : listed.body.at("models"))
    models.push_back({{"id", m.at("id")}, {"load_seconds", m.at("load_seconds")}});
  return {200, {{"status", "started"}, {"models", models}}};
}

Reply FleetEndpoints::readyz() {
  const double now = g_get_monotonic_time() / 1e6;
  const std::vector<CameraState> cams = states();
  clock_.observe(cams, now);
  const Readiness r =
      evaluate_readiness(cams, clock_, now, app_->config().ready_grace_s, true, draining_);
  if (r.ready) return {200, {{"status", "ready"}, {"streams", cams.size()}}};
  return {503, {{"status", "not ready"}, {"reasons", r.reasons}}};
}

Reply FleetEndpoints::shard_reply() const {
  json running = json::array(), pinned = json::array();
  for (const auto& c : states()) {
    if (c.state == "stopping") continue;
    running.push_back(c.id);
    if (plan_.owner(c.id) != shard_.index) pinned.push_back(c.id);
  }
  return {200,
          {{"index", shard_.index},
           {"count", shard_.count},
           {"sharded", shard_.enabled},
           {"hash",
            "rendezvous: mix64(fnv1a64(id, 0x00, k as 4 bytes LE)), highest wins, at most "
            "ceil(cameras/N) per shard; ids outside the list: highest wins"},
           {"camera_list", plan_.list_hash()},
           {"owned", owned_},
           {"streams", running},
           {"pinned", pinned}}};
}

std::optional<Reply> FleetEndpoints::gate_add(std::string* body) const {
  json j;
  try {
    j = parse_json(*body, "request body", 8);
  } catch (const std::exception&) {
    return std::nullopt;  // add_stream says what is wrong with it
  }
  if (!j.is_object()) return std::nullopt;
  bool pin = false;
  if (j.contains("pin")) {
    if (!j["pin"].is_boolean())
      return Reply{400,
                   {{"error",
                     "pin: must be true or false (true runs a camera another shard "
                     "owns here)"},
                    {"field", "pin"}}};
    pin = j["pin"].get<bool>();
    j.erase("pin");
    *body = j.dump();
  }
  if (!shard_.enabled || pin || !j.contains("id") || !j["id"].is_string())
    return std::nullopt;  // add_stream checks the id
  const std::string id = j["id"].get<std::string>();
  const int owner = plan_.owner(id);
  if (owner == shard_.index) return std::nullopt;
  return Reply{421,
               {{"error", "stream '" + printable(id, 64) + "' belongs to shard " +
                              std::to_string(owner) + " of " + std::to_string(shard_.count) +
                              " (this is shard " + std::to_string(shard_.index) +
                              "): add it there, or send \"pin\": true to run it here"},
                {"field", "id"},
                {"owner", owner},
                {"shard", shard_.index},
                {"shards", shard_.count}}};
}

std::string FleetEndpoints::label_metrics(const std::string& text) const {
  if (!shard_.enabled) return text;
  // Every shard says how many there should be, so a rule can tell that one
  // is missing even when its pod does not exist (no target, no `up`).
  // And which camera list it split: shards given different lists leave
  // cameras on no shard (or on two), which no other series shows.
  const std::string count =
      "# HELP torchinfer_shards Shards the camera list is split over (N).\n"
      "# TYPE torchinfer_shards gauge\ntorchinfer_shards " +
      std::to_string(shard_.count) +
      "\n# HELP torchinfer_shard_camera_list The hash of the camera list this shard split "
      "(GET /shard camera_list); shards that disagree split different lists.\n"
      "# TYPE torchinfer_shard_camera_list gauge\ntorchinfer_shard_camera_list{camera_list=\"" +
      plan_.list_hash() + "\"} 1\n";
  return add_constant_label(text + count, "shard", std::to_string(shard_.index));
}

}  // namespace torchinfer::server
