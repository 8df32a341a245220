// ServerApp's evidence: each "evidence" camera's store and the REST
// endpoints that list and serve its files (docs/server.md, "Evidence").
#include <cctype>

#include "common/utf8.h"
#include "server_app.h"

namespace torchinfer::server {

using nlohmann::json;

namespace {

Reply not_found(const std::string& message) {
  return {404, {{"error", message}}};
}

// The events a listing shows at most (newest first); every file stays
// reachable by its number.
constexpr std::size_t kListedEvents = 100;

}  // namespace

std::shared_ptr<evidence::EvidenceStore> ServerApp::open_evidence(const StreamSpec& spec,
                                                                  std::string* why) const {
  evidence::EvidenceSettings s = spec.evidence->settings;
  s.dir = resolve_evidence_dir(*spec.evidence, config_.output_dir, spec.id);
  try {
    return std::make_shared<evidence::EvidenceStore>(s, spec.id);
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return nullptr;
}

// A configured camera whose folder cannot be used fails with the reason
// (like any camera that cannot start); the others run.
void ServerApp::attach_evidence(Camera& cam, std::shared_ptr<evidence::EvidenceStore> store) const {
  std::string why;
  if (!store) store = open_evidence(cam.spec(), &why);
  if (!store) return cam.set_evidence(nullptr, why);
  cam.set_evidence(std::make_shared<CameraEvidence>(cam.spec().id, *cam.spec().evidence, store),
                   "");
}

Reply ServerApp::list_events(const std::string& id) const {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) cam = cameras_.find_stopping(id);
  if (!cam) return not_found("no stream '" + printable(id) + "'");
  const std::shared_ptr<CameraEvidence>& ev = cam->evidence();
  if (!ev)
    return not_found("stream '" + id + "' keeps no evidence (add \"evidence\" to its settings)");
  json events = json::array();
  for (const auto& e : ev->store().list(kListedEvents)) events.push_back(ev->event_json(e));
  return {200, {{"stream", id}, {"events", events}, {"evidence", ev->status()}}};
}

int ServerApp::event_file(const std::string& id, const std::string& n_text, const std::string& file,
                          std::string* path, const char** type, std::string* why) const {
  std::shared_ptr<Camera> cam = cameras_.find(id);
  if (!cam) cam = cameras_.find_stopping(id);
  const std::shared_ptr<CameraEvidence> ev = cam ? cam->evidence() : nullptr;
  bool digits = !n_text.empty() && n_text.size() <= 19;
  for (char c : n_text) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  const std::string kind = file == "snapshot.jpg" ? "snapshot"
                           : file == "crop.jpg"   ? "crop"
                           : file == "clip.mkv"   ? "clip"
                                                  : "";
  if (!cam)
    *why = "no stream '" + printable(id) + "'";
  else if (!ev)
    *why = "stream '" + id + "' keeps no evidence";
  else if (!digits)
    *why = "no event '" + printable(n_text, 20) + "': events are numbered 1, 2, ...";
  else if (kind.empty())
    *why =
        "no file '" + printable(file, 40) + "': an event has snapshot.jpg, crop.jpg and clip.mkv";
  if (!why->empty()) return 404;
  const std::uint64_t n = std::stoull(n_text);
  const std::string event = "event " + n_text + " of stream '" + id + "'";
  const evidence::EventState state = ev->store().state(n);
  if (state == evidence::EventState::kUnknown) {
    *why = "no " + event + " yet";
    return 404;
  }
  const std::optional<evidence::EventRecord> e = ev->store().find(n);
  if (state == evidence::EventState::kPruned || !e) {
    *why = event + " is no longer kept: retention deleted it (max_events " +
           std::to_string(ev->store().settings().max_events) + ", max_bytes " +
           std::to_string(ev->store().settings().max_bytes) + ")";
    return 404;
  }
  const bool written = kind == "snapshot" ? e->snapshot_written
                       : kind == "crop"   ? e->crop_written
                                          : e->clip_written;
  if (!written) {
    const auto err = e->errors.find(kind);
    *why = err != e->errors.end()
               ? "the " + kind + " of " + event + " could not be written: " + err->second
               : "the " + kind + " of " + event + " is not written yet" +
                     (kind == "clip" ? " (a clip lands post_s after its event)" : "");
    return 404;
  }
  *path = kind == "snapshot" ? e->snapshot : kind == "crop" ? e->crop : e->clip;
  *type = kind == "clip" ? "video/x-matroska" : "image/jpeg";
  return 200;
}

}  // namespace torchinfer::server
