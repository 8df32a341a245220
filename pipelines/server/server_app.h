// torchinfer-server's state: the shared models, the cameras by id, and what
// each REST call does to them. HTTP itself (SoupServer) is in http_api.cpp;
// this class answers with a status and a body.
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "camera.h"
#include "restream.h"
#include "server/core/server_config.h"
#include "server/core/stream_registry.h"

namespace torchinfer::server {

struct Reply {
  int status = 200;
  nlohmann::json body;
};

class ServerApp {
 public:
  explicit ServerApp(ServerConfig config);
  ~ServerApp();

  const ServerConfig& config() const { return config_; }
  // The RTSP server of the re-streams; it outlives this object. Null with
  // the reason a stream asking for a re-stream is refused. Before
  // start_configured_streams().
  void set_restream(RestreamServer* server, std::string why_not = "") {
    restream_ = server;
    restream_off_ = std::move(why_not);
  }
  // Loads every model once (a torchinfer of each held in PAUSED, so the
  // model stays loaded while no camera uses it). False with the reason.
  bool load_models(std::string* why);
  // The cameras of the configuration file; a camera that fails is reported
  // in its state, not fatal.
  void start_configured_streams();

  Reply add_stream(const std::string& body);
  Reply remove_stream(const std::string& id);
  Reply list_streams() const;
  Reply get_stream(const std::string& id) const;
  Reply list_models() const;
  // GET|PUT /streams/{id}/analytics: the camera's lines, zones and counts;
  // PUT replaces the lines and zones on the running pipeline (400 bad body,
  // 404, 409 no tracking).
  Reply analytics(const std::string& id) const;
  Reply set_analytics(const std::string& id, const std::string& body);
  Reply health() const;
  // POST /streams/{id}/trigger: 202 with the camera's trigger count, 404,
  // 409 (not a camera in software-trigger mode) or 503 (not acquiring now).
  Reply trigger(const std::string& id);
  // 200 with JPEG bytes, or 404/503 with the reason in *why.
  int snapshot(const std::string& id, std::vector<std::uint8_t>* jpeg, std::string* why) const;
  // Evidence (server_app_evidence.cpp): GET /streams/{id}/events, newest
  // first; and one event's file ("snapshot.jpg", "crop.jpg", "clip.mkv"):
  // 200 with its path and Content-Type, or 404 with why.
  Reply list_events(const std::string& id) const;
  int event_file(const std::string& id, const std::string& n, const std::string& file,
                 std::string* path, const char** type, std::string* why) const;
  std::string metrics();
  void count_reply(int status);

  // SIGTERM: EOS into every camera; true once all have drained.
  void begin_drain();
  bool drained() const;
  // Stops everything (the pipelines to NULL) and waits for removed cameras.
  void stop_all();
  // After stop_all(): waits up to `timeout_s` for the cameras' last
  // references to go (reap()); false if one is still going.
  bool reaped(double timeout_s);

 private:
  struct Model {
    ModelSpec spec;
    GstElement* holder = nullptr;  // pipeline with a lone torchinfer
    GstElement* infer = nullptr;
    double load_seconds = 0;
    std::mutex mu;  // retired, retiring
    std::uint64_t retired_frames = 0;
    std::vector<std::shared_ptr<Camera>> retiring;
  };
  Model* model(const std::string& id) const;
  // `store`: the camera's evidence store when add_stream opened it already.
  std::shared_ptr<Camera> launch(const StreamSpec& spec,
                                 std::shared_ptr<evidence::EvidenceStore> store = nullptr);
  std::shared_ptr<evidence::EvidenceStore> open_evidence(const StreamSpec& spec,
                                                         std::string* why) const;
  void attach_evidence(Camera& cam, std::shared_ptr<evidence::EvidenceStore> store) const;
  void stop_in_background(std::shared_ptr<Camera> cam, Model* m);
  void stopped(std::shared_ptr<Camera> cam);
  // Drops a stopped camera on the reaper thread: its last reference joins
  // its Aravis thread and ends its Aravis stream and device, which wait on a
  // camera that stopped answering (seconds: 7.4 s of /livez measured when
  // it ran on the main loop).
  void reap(std::shared_ptr<Camera> cam);
  void reaper_loop();

  ServerConfig config_;
  RestreamServer* restream_ = nullptr;
  std::string restream_off_ = "the server runs without RTSP (--rtsp-port 0)";
  std::vector<std::unique_ptr<Model>> models_;
  StreamRegistry<Camera> cameras_;
  std::map<std::string, std::uint64_t> replies_;

  // Each removed camera stops (EOS, drain, NULL) on a thread of its own,
  // off the main loop, so a removal never holds up the API, the other
  // cameras or another removal. They are bounded: a stopping camera counts
  // against max_streams until stopped() forgets it on the main loop.
  std::mutex stoppers_mu_;
  std::map<Camera*, std::thread> stoppers_;

  std::mutex reap_mu_;  // below
  std::condition_variable reap_cv_;
  std::deque<std::shared_ptr<Camera>> reap_;
  bool reaping_ = false;  // the reaper holds one of reap_'s, dropping it
  bool reap_stop_ = false;
  std::thread reaper_;
};

}  // namespace torchinfer::server
