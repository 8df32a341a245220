#include "server_app.h"

#include <glib/gstdio.h>

#include "common/json_file.h"
#include "common/utf8.h"
#include "server/core/line_metrics.h"
#include "server/core/source_check.h"
#include "server/core/stream_analytics.h"

namespace torchinfer::server {

using nlohmann::json;

namespace {

Reply error_reply(int status, const std::string& message, const std::string& field = "") {
  json body = {{"error", message}};
  if (!field.empty()) body["field"] = field;
  return {status, body};
}

// REST bodies are one stream object: a few levels at most.
constexpr int kMaxBodyDepth = 8;

}  // namespace

ServerApp::ServerApp(ServerConfig config)
    : config_(std::move(config)), cameras_(config_.max_streams) {
  g_mkdir_with_parents(config_.output_dir.c_str(), 0755);
  reaper_ = std::thread([this] { reaper_loop(); });
}

ServerApp::~ServerApp() {
  stop_all();
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_stop_ = true;
  }
  reap_cv_.notify_all();
  reaper_.join();
  for (auto& m : models_) {
    if (m->holder) {
      gst_element_set_state(m->holder, GST_STATE_NULL);
      gst_object_unref(m->holder);
    }
  }
}

ServerApp::Model* ServerApp::model(const std::string& id) const {
  for (const auto& m : models_)
    if (m->spec.id == id) return m.get();
  return nullptr;
}

bool ServerApp::load_models(std::string* why) {
  for (std::size_t i = 0; i < config_.models.size(); ++i) {
    const ModelSpec& spec = config_.models[i];
    auto m = std::make_unique<Model>();
    m->spec = spec;
    m->holder = gst_pipeline_new(("model-" + spec.id).c_str());
    m->infer = gst_element_factory_make("torchinfer", nullptr);
    if (!m->infer) {
      *why =
          "GStreamer element 'torchinfer' is not installed: set GST_PLUGIN_PATH to the "
          "plugin folder";
      gst_object_unref(m->holder);
      return false;
    }
    gst_bin_add(GST_BIN(m->holder), m->infer);
    g_object_set(m->infer, "model", spec.path.c_str(), "model-instance-id", spec.id.c_str(),
                 nullptr);
    gst_util_set_object_arg(G_OBJECT(m->infer), "batch-size",
                            std::to_string(spec.batch_size).c_str());
    gst_util_set_object_arg(G_OBJECT(m->infer), "batch-timeout",
                            std::to_string(spec.batch_timeout_us).c_str());
    if (spec.threads > 0)
      gst_util_set_object_arg(G_OBJECT(m->infer), "threads", std::to_string(spec.threads).c_str());
    gst_util_set_object_arg(G_OBJECT(m->infer), "lanes", std::to_string(spec.lanes).c_str());
    const gint64 t0 = g_get_monotonic_time();
    // No sink: the pipeline reaches PAUSED once torchinfer has loaded,
    // optimised and warmed the model.
    if (gst_element_set_state(m->holder, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
      GstBus* bus = gst_element_get_bus(m->holder);
      GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
      GError* err = nullptr;
      if (msg) gst_message_parse_error(msg, &err, nullptr);
      *why = "models[" + std::to_string(i) + "] ('" + spec.id +
             "'): " + (err ? err->message : "the model cannot be loaded");
      g_clear_error(&err);
      if (msg) gst_message_unref(msg);
      gst_object_unref(bus);
      gst_element_set_state(m->holder, GST_STATE_NULL);
      gst_object_unref(m->holder);
      return false;
    }
    double load_ms = 0;
    g_object_get(m->infer, "load-time", &load_ms, nullptr);
    m->load_seconds = load_ms > 0 ? load_ms / 1e3 : (g_get_monotonic_time() - t0) / 1e6;
    g_printerr("torchinfer-server: model %s loaded from %s in %.2f s\n", spec.id.c_str(),
               spec.path.c_str(), m->load_seconds);
    models_.push_back(std::move(m));
  }
  return true;
}

std::shared_ptr<Camera> ServerApp::launch(const StreamSpec& spec,
                                          std::shared_ptr<evidence::EvidenceStore> store) {
  Model* m = model(spec.model);
  std::shared_ptr<RestreamFeed> feed;
  if (spec.restream && restream_) feed = restream_->add(spec.id);
  auto cam = std::make_shared<Camera>(spec, m->spec, config_.output_dir, config_.mqtt, feed);
  if (spec.evidence) attach_evidence(*cam, std::move(store));
  if (spec.parts && !spec.parts->classifier.empty())
    cam->set_classifier(model(spec.parts->classifier)->spec);
  cameras_.add(spec.id, cam);
  cam->start();
  return cam;
}

void ServerApp::start_configured_streams() {
  for (const auto& s : config_.streams) launch(s);
}

Reply ServerApp::add_stream(const std::string& body) {
  if (body.size() > config_.max_body_bytes)
    return error_reply(413, "the body is larger than max_body_bytes (" +
                                std::to_string(config_.max_body_bytes) + ")");
  StreamSpec spec;
  try {
    const json j = parse_json(body, "request body", kMaxBodyDepth);
    spec = parse_stream_spec(j, config_.models, config_.mqtt, "", "");
  } catch (const FieldError& e) {
    return error_reply(400, e.what(), e.field());
  } catch (const std::exception& e) {
    return error_reply(400, e.what());
  }
  if (spec.restream && !restream_)
    return error_reply(400, "restream: " + restream_off_, "restream");
  switch (cameras_.check(spec.id)) {
    case AddResult::kDuplicateId:
      return error_reply(409, "a stream '" + spec.id + "' exists already", "id");
    case AddResult::kStopping:
      // Its pipeline still writes <id>.jsonl: a new one would truncate it.
      return error_reply(409,
                         "the stream '" + spec.id +
                             "' was removed and is still stopping (draining into its JSON "
                             "file); add it again once GET /streams/" +
                             spec.id + " answers 404",
                         "id");
    case AddResult::kLimitReached:
      return error_reply(
          409, "the server runs max_streams (" + std::to_string(cameras_.max_streams()) +
                   ") streams already" +
                   (cameras_.stopping_count() ? " (" + std::to_string(cameras_.stopping_count()) +
                                                    " of them removed and still stopping)"
                                              : "") +
                   "; remove one first");
    case AddResult::kAdded:
      break;
  }
  if (spec.kind == SourceKind::kFile) {
    const std::string problem = file_source_problem(spec.location);
    if (!problem.empty()) return error_reply(400, "uri: " + problem, "uri");
  }
  std::shared_ptr<evidence::EvidenceStore> store;
  if (spec.evidence) {
    std::string why;
    // A client may not pick where the server writes (and deletes): only
    // the configuration file names folders outside output_dir.
    if (!spec.evidence->settings.dir.empty() && spec.evidence->settings.dir[0] == '/')
      return error_reply(400,
                         "evidence.dir: a REST body names a folder under output_dir (a relative "
                         "path, default evidence/<id>); absolute folders are for the config file",
                         "evidence.dir");
    store = open_evidence(spec, &why);
    if (!store) return error_reply(400, "evidence.dir: " + why, "evidence.dir");
  }
  auto cam = launch(spec, store);
  g_printerr("torchinfer-server: stream %s added (%s)\n", spec.id.c_str(), spec.uri.c_str());
  return {201, cam->status()};
}

Reply ServerApp::analytics(const std::string& id) const {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) return error_reply(404, "no stream '" + printable(id) + "'");
  return {200, cam->analytics_status()};
}

Reply ServerApp::set_analytics(const std::string& id, const std::string& body) {
  if (body.size() > config_.max_body_bytes)
    return error_reply(413, "the body is larger than max_body_bytes (" +
                                std::to_string(config_.max_body_bytes) + ")");
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) return error_reply(404, "no stream '" + printable(id) + "'");
  AnalyticsConfig layout;
  try {
    layout = parse_analytics_body(parse_json(body, "request body", kMaxBodyDepth));
  } catch (const FieldError& e) {
    return error_reply(400, e.what(), e.field());
  } catch (const std::exception& e) {
    return error_reply(400, e.what());
  }
  std::string why;
  const int status = cam->set_analytics(layout, &why);
  if (status != 200) return error_reply(status, why, status == 409 ? "track" : "");
  g_printerr("torchinfer-server: stream %s: %zu lines, %zu zones\n", id.c_str(),
             layout.lines.size(), layout.zones.size());
  return {200, cam->analytics_status()};
}

Reply ServerApp::remove_stream(const std::string& id) {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) {
    // Removing it again changes nothing: it is on its way out.
    if (std::shared_ptr<Camera> stopping = cameras_.find_stopping(id))
      return {200, stopping->status()};
    return error_reply(404, "no stream '" + printable(id) + "'");
  }
  Model* m = model(cam->spec().model);
  cam->detach();
  // Its clients get the end of the stream now, not after the drain.
  if (cam->restream()) restream_->remove(cam->restream());
  {
    std::lock_guard<std::mutex> lock(m->mu);
    cameras_.remove(id);
    m->retiring.push_back(cam);
  }
  stop_in_background(cam, m);
  g_printerr("torchinfer-server: stream %s removed\n", id.c_str());
  return {200, cam->status()};
}

void ServerApp::stop_in_background(std::shared_ptr<Camera> cam, Model* m) {
  std::lock_guard<std::mutex> lock(stoppers_mu_);
  Camera* key = cam.get();
  stoppers_[key] = std::thread([this, cam, m] {
    cam->shutdown(std::min(config_.drain_timeout_s, 5.0));
    {
      std::lock_guard<std::mutex> mlock(m->mu);
      m->retired_frames += cam->frames_inferred();
      m->retiring.erase(std::find(m->retiring.begin(), m->retiring.end(), cam));
    }
    // The registry belongs to the main loop.
    auto* done = new std::pair<ServerApp*, std::shared_ptr<Camera>>(this, cam);
    // Always queued (never run here): stopped() joins this thread.
    g_idle_add_full(
        G_PRIORITY_DEFAULT,
        [](gpointer p) {
          auto* d = static_cast<std::pair<ServerApp*, std::shared_ptr<Camera>>*>(p);
          d->first->stopped(std::move(d->second));
          return G_SOURCE_REMOVE;
        },
        done,
        [](gpointer p) { delete static_cast<std::pair<ServerApp*, std::shared_ptr<Camera>>*>(p); });
  });
}

void ServerApp::stopped(std::shared_ptr<Camera> cam) {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(stoppers_mu_);
    auto it = stoppers_.find(cam.get());
    if (it == stoppers_.end()) return;  // stop_all() joined it already
    t = std::move(it->second);
    stoppers_.erase(it);
  }
  t.join();  // it has nothing left to do but return
  cameras_.forget(cam);
  g_printerr("torchinfer-server: stream %s stopped\n", cam->spec().id.c_str());
  reap(std::move(cam));
}

void ServerApp::reap(std::shared_ptr<Camera> cam) {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_.push_back(std::move(cam));
  }
  reap_cv_.notify_all();
}

void ServerApp::reaper_loop() {
  std::unique_lock<std::mutex> lock(reap_mu_);
  for (;;) {
    reap_cv_.wait(lock, [this] { return reap_stop_ || !reap_.empty(); });
    if (reap_.empty()) return;  // stopping, and nothing left
    std::shared_ptr<Camera> cam = std::move(reap_.front());
    reap_.pop_front();
    reaping_ = true;
    lock.unlock();
    cam.reset();  // the camera's destructor, here
    lock.lock();
    reaping_ = false;
    reap_cv_.notify_all();
  }
}

bool ServerApp::reaped(double timeout_s) {
  std::unique_lock<std::mutex> lock(reap_mu_);
  return reap_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                           [this] { return reap_.empty() && !reaping_; });
}

Reply ServerApp::list_streams() const {
  json list = json::array();
  for (const auto& [id, cam] : cameras_.items()) list.push_back(cam->status());
  for (const auto& [id, cam] : cameras_.stopping()) list.push_back(cam->status());
  return {200, {{"streams", list}, {"max_streams", cameras_.max_streams()}}};
}

Reply ServerApp::get_stream(const std::string& id) const {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) cam = cameras_.find_stopping(id);
  if (!cam) return error_reply(404, "no stream '" + printable(id) + "'");
  return {200, cam->status()};
}

Reply ServerApp::list_models() const {
  json list = json::array();
  for (const auto& m : models_) {
    int active = 0;  // the configured lanes as the load resolved them (0 = automatic)
    g_object_get(m->infer, "active-lanes", &active, nullptr);
    list.push_back({{"id", m->spec.id},
                    {"path", m->spec.path},
                    {"batch_size", m->spec.batch_size},
                    {"lanes", m->spec.lanes},
                    {"lanes_active", active},
                    {"load_seconds", m->load_seconds}});
  }
  return {200, {{"models", list}}};
}

Reply ServerApp::health() const {
  int failed = 0;
  for (const auto& [id, cam] : cameras_.items())
    failed += cam->figures().state == std::string("failed");
  return {200,
          {{"status", "ok"},
           {"streams", cameras_.size()},
           {"failed_streams", failed},
           {"stopping_streams", cameras_.stopping_count()}}};
}

int ServerApp::snapshot(const std::string& id, std::vector<std::uint8_t>* jpeg,
                        std::string* why) const {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) {
    *why = "no stream '" + printable(id) + "'";
    return 404;
  }
  *jpeg = cam->snapshot_jpeg(why);
  return jpeg->empty() ? 503 : 200;
}

Reply ServerApp::trigger(const std::string& id) {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) return error_reply(404, "no stream '" + printable(id) + "'");
  std::string why;
  const int status = cam->trigger(&why);
  if (status != 202) return error_reply(status, why);
  // The count includes this trigger once the camera's thread has sent it;
  // the frame's result shows in GET /streams/{id} camera.last_result.
  return {202, {{"id", id}, {"queued", true}}};
}

void ServerApp::count_reply(int status) {
  replies_[std::to_string(status)]++;
}

std::string ServerApp::metrics() {
  MetricsSnapshot s;
  s.max_streams = cameras_.max_streams();
  s.streams_added = cameras_.added();
  s.streams_removed = cameras_.removed();
  s.http_requests = replies_;
  std::map<std::string, std::uint64_t> live_frames;
  std::map<std::string, int> live_count;
  for (const auto& [id, cam] : cameras_.items()) {
    StreamFigures f = cam->figures();
    live_frames[f.model] += f.frames_inferred;
    live_count[f.model]++;
    s.streams.push_back(std::move(f));
  }
  for (const auto& m : models_) {
    ModelFigures f;
    f.id = m->spec.id;
    f.loaded = m->holder != nullptr;
    f.load_seconds = m->load_seconds;
    f.streams = live_count[f.id];
    {
      std::lock_guard<std::mutex> lock(m->mu);
      f.frames_inferred = m->retired_frames + live_frames[f.id];
      for (const auto& c : m->retiring) f.frames_inferred += c->frames_inferred();
      s.streams_stopping += static_cast<int>(m->retiring.size());
    }
    s.models.push_back(f);
  }
  s.process = read_process_figures();
  return render_prometheus(s) + render_line_metrics(s);
}

void ServerApp::begin_drain() {
  for (const auto& [id, cam] : cameras_.items()) cam->begin_drain();
}

bool ServerApp::drained() const {
  for (const auto& [id, cam] : cameras_.items())
    if (!cam->drained()) return false;
  return true;
}

void ServerApp::stop_all() {
  for (const auto& [id, cam] : cameras_.items()) {
    cam->detach();
    cam->shutdown(0);
  }
  while (cameras_.size()) cameras_.remove(cameras_.items().front().first);
  std::map<Camera*, std::thread> stoppers;
  {
    std::lock_guard<std::mutex> lock(stoppers_mu_);
    stoppers.swap(stoppers_);
  }
  for (auto& [cam, t] : stoppers) t.join();
  while (cameras_.stopping_count()) {
    std::shared_ptr<Camera> cam = cameras_.stopping().front().second;
    cameras_.forget(cam);
    reap(std::move(cam));
  }
}

}  // namespace torchinfer::server
