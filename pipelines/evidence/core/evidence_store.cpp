#include "evidence/core/evidence_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/file_check.h"
#include "common/json_file.h"
#include "common/utf8.h"

namespace torchinfer::evidence {

using nlohmann::json;

namespace {

const char* const kKinds[] = {"snapshot", "crop", "clip"};

std::string suffix_of(const std::string& kind) {
  if (kind == "snapshot") return "snapshot.jpg";
  if (kind == "crop") return "crop.jpg";
  if (kind == "clip") return "clip.mkv";
  if (kind == "event") return "event.json";
  return "";
}

bool known_kind(const std::string& kind) {
  return kind == "snapshot" || kind == "crop" || kind == "clip";
}

std::string type_name(const json& v) {
  return v.is_number_integer() ? "integer" : v.type_name();
}

std::string sys_error(const std::string& path, int err) {
  return path + ": " + std::strerror(err);
}

// Integers only (a count or a byte size given as 1.5 is a mistake).
std::uint64_t read_count(const json& j, const std::string& key, const std::string& path,
                         std::uint64_t fallback, std::uint64_t lo, std::uint64_t hi) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw FieldError("", path, "must be an integer, not " + type_name(v));
  const bool negative = !v.is_number_unsigned() && v.get<long long>() < 0;
  const std::uint64_t x = negative ? 0 : v.get<std::uint64_t>();
  if (negative || x < lo || x > hi)
    throw FieldError("", path,
                     "out of range: give an integer from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + " (got " + v.dump() + ")");
  return x;
}

double read_seconds(const json& j, const std::string& key, const std::string& path,
                    double fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number()) throw FieldError("", path, "must be a number, not " + type_name(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || x > 30)
    throw FieldError("", path, "out of range: give seconds from 0 to 30 (got " + v.dump() + ")");
  return x;
}

bool valid_camera(const std::string& c) {
  if (c.empty() || c.size() > 64 || c[0] == '.') return false;
  for (unsigned char ch : c)
    if (!std::isalnum(ch) && ch != '_' && ch != '-' && ch != '.') return false;
  return true;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Writes all of data to fd; 0 or errno.
int write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::write(fd, data, size);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return EIO;
    data += w;
    size -= static_cast<std::size_t>(w);
  }
  return 0;
}

// "<camera>-<n>-<suffix>" -> n and kind ("event" for the record).
bool parse_name(const std::string& name, const std::string& camera, std::uint64_t* n,
                std::string* kind) {
  const std::string prefix = camera + "-";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  std::size_t i = prefix.size(), start = i;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == start || i - start > 19 || i >= name.size() || name[i] != '-') return false;
  const std::string rest = name.substr(i + 1);
  for (const char* k : {"snapshot", "crop", "clip", "event"})
    if (rest == suffix_of(k)) {
      *n = std::stoull(name.substr(start, i - start));
      *kind = k;
      return *n > 0;
    }
  return false;
}

std::string* path_field(EventRecord& e, const std::string& kind) {
  return kind == "snapshot" ? &e.snapshot : kind == "crop" ? &e.crop : &e.clip;
}

bool* written_flag(EventRecord& e, const std::string& kind) {
  if (kind == "snapshot") return &e.snapshot_written;
  if (kind == "crop") return &e.crop_written;
  if (kind == "clip") return &e.clip_written;
  return nullptr;
}

}  // namespace

const std::vector<std::string>& evidence_setting_keys() {
  static const std::vector<std::string> keys = {"dir",        "pre_s",     "post_s",
                                                "max_events", "max_bytes", "ring_max_bytes"};
  return keys;
}

EvidenceSettings parse_evidence_settings(const json& j, const std::string& field_path) {
  auto path = [&](const std::string& key) {
    return field_path.empty() ? key : field_path + "." + key;
  };
  if (!j.is_object())
    throw FieldError("", field_path.empty() ? "(evidence)" : field_path,
                     "must be a JSON object, not " + type_name(j));
  std::string names;
  for (const auto& k : evidence_setting_keys()) names += (names.empty() ? "" : ", ") + k;
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const auto& name : evidence_setting_keys()) known = known || name == k;
    if (!known)
      throw FieldError("", path(printable(k, 40)), "unknown field; the fields are " + names);
  }
  EvidenceSettings s;
  if (j.contains("dir")) {
    const json& v = j.at("dir");
    if (!v.is_string()) throw FieldError("", path("dir"), "must be a string, not " + type_name(v));
    s.dir = v.get<std::string>();
    if (s.dir.empty() || s.dir.size() > 4096)
      throw FieldError("", path("dir"), "give a folder's path of 1 to 4096 characters");
    for (unsigned char c : s.dir)
      if (c < 0x20 || c == 0x7f) throw FieldError("", path("dir"), "holds a control character");
  }
  s.pre_s = read_seconds(j, "pre_s", path("pre_s"), s.pre_s);
  s.post_s = read_seconds(j, "post_s", path("post_s"), s.post_s);
  s.max_events = read_count(j, "max_events", path("max_events"), s.max_events, 1, 1000000);
  s.max_bytes = read_count(j, "max_bytes", path("max_bytes"), s.max_bytes, 4096, 1ull << 50);
  s.ring_max_bytes = read_count(j, "ring_max_bytes", path("ring_max_bytes"), s.ring_max_bytes,
                                64u << 10, 4ull << 30);
  return s;
}

json to_json(const EvidenceSettings& s) {
  return {{"dir", s.dir},
          {"pre_s", s.pre_s},
          {"post_s", s.post_s},
          {"max_events", s.max_events},
          {"max_bytes", s.max_bytes},
          {"ring_max_bytes", s.ring_max_bytes}};
}

json to_json(const EventRecord& e) {
  json j = {{"n", e.n},
            {"camera", e.camera},
            {"reason", e.reason},
            {"pts_ns", e.pts_ns},
            {"wall_ms", e.wall_ms},
            {"track_id", e.track_id},
            {"label", e.label},
            {"verdict", e.verdict},
            {"snapshot", e.snapshot},
            {"crop", e.crop},
            {"clip", e.clip},
            {"snapshot_written", e.snapshot_written},
            {"crop_written", e.crop_written},
            {"clip_written", e.clip_written},
            {"clip_seconds", e.clip_seconds},
            {"bytes", e.bytes},
            {"errors", e.errors}};
  if (!e.defect.empty()) {
    j["defect"] = e.defect;
    j["defect_score"] = e.defect_score;
  }
  return j;
}

std::string snapshot_caption(const EventRecord& e) {
  std::string out = e.track_id >= 0 ? "#" + std::to_string(e.track_id) : std::string();
  auto add = [&](const std::string& word) {
    if (word.empty()) return;
    out += (out.empty() ? "" : " ") + word;
  };
  add(e.label);
  if (!e.defect.empty()) {
    add(e.defect);
    if (e.defect_score >= 0) {
      char score[32];
      std::snprintf(score, sizeof score, "%.2f", e.defect_score);
      add(score);
    }
  } else {
    add(e.verdict);
  }
  return out;
}

EventRecord event_from_json(const json& j) {
  try {
    EventRecord e;
    e.n = j.at("n").get<std::uint64_t>();
    e.camera = j.at("camera").get<std::string>();
    e.reason = j.at("reason").get<std::string>();
    e.pts_ns = j.at("pts_ns").get<std::int64_t>();
    e.wall_ms = j.at("wall_ms").get<std::int64_t>();
    e.track_id = j.at("track_id").get<std::int64_t>();
    e.label = j.at("label").get<std::string>();
    e.verdict = j.at("verdict").get<std::string>();
    e.snapshot = j.at("snapshot").get<std::string>();
    e.crop = j.at("crop").get<std::string>();
    e.clip = j.at("clip").get<std::string>();
    e.snapshot_written = j.at("snapshot_written").get<bool>();
    e.crop_written = j.at("crop_written").get<bool>();
    e.clip_written = j.at("clip_written").get<bool>();
    e.clip_seconds = j.at("clip_seconds").get<double>();
    e.bytes = j.at("bytes").get<std::uint64_t>();
    if (j.contains("errors")) e.errors = j.at("errors").get<std::map<std::string, std::string>>();
    if (j.contains("defect")) e.defect = j.at("defect").get<std::string>();
    if (j.contains("defect_score")) e.defect_score = j.at("defect_score").get<double>();
    return e;
  } catch (const json::exception& x) {
    throw Error(ErrorKind::kConfigInvalid, std::string("event record: ") + x.what());
  }
}

std::uint64_t EvidenceStore::Kept::total() const {
  std::uint64_t t = 0;
  for (const auto& [kind, size] : sizes) t += size;
  return t;
}

EvidenceStore::EvidenceStore(EvidenceSettings s, std::string camera)
    : folder_([&] {
        if (!valid_camera(camera))
          throw Error(ErrorKind::kInvalidArgument,
                      "evidence: '" + printable(camera, 80) +
                          "' cannot name files: use 1 to 64 letters, digits, '_', '-' or '.'");
        return std::make_unique<EvidenceFolder>(s.dir);
      }()),
      settings_([&] {
        s.dir = folder_->path();
        return s;
      }()),
      camera_(std::move(camera)) {
  load_existing();
}

EvidenceStore::~EvidenceStore() {
  delete_doomed();
}

std::string EvidenceStore::name_of(std::uint64_t n, const std::string& kind) const {
  return camera_ + "-" + std::to_string(n) + "-" + suffix_of(kind);
}

std::string EvidenceStore::path_of(std::uint64_t n, const std::string& kind) const {
  return settings_.dir + "/" + name_of(n, kind);
}

std::string EvidenceStore::temp_name_locked() {
  return "." + camera_ + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(++temp_serial_);
}

std::string EvidenceStore::temp_name() {
  std::lock_guard<std::mutex> lock(mu_);
  return temp_name_locked();
}

// What an earlier run left: numbering continues after it, its bytes count
// against max_bytes and its events are listed. Half-written temp files of a
// run that died are deleted.
void EvidenceStore::load_existing() {
  const std::string temp_prefix = "." + camera_ + ".tmp-";
  std::vector<std::string> stale;
  for (const std::string& name : folder_->names()) {
    // Ours and the recorder's (a clip muxed to ".<camera>-<n>-clip.mkv.part").
    const bool part = name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0 &&
                      name.compare(0, camera_.size() + 2, "." + camera_ + "-") == 0;
    if (part || name.compare(0, temp_prefix.size(), temp_prefix) == 0) {
      stale.push_back(name);
      continue;
    }
    std::uint64_t n = 0;
    std::string kind;
    if (!parse_name(name, camera_, &n, &kind)) continue;
    Kept& k = kept_[n];
    k.sizes[kind] = folder_->size(name);
    next_n_ = std::max(next_n_, n + 1);
  }
  for (const auto& name : stale) folder_->remove(name);
  for (auto& [n, k] : kept_) {
    try {
      if (k.sizes.count("event"))
        k.e = event_from_json(read_json_file(path_of(n, "event"), "event record", 64 << 10));
    } catch (const std::exception&) {
      // A damaged record: the files still count and are listed as they are.
    }
    k.e.n = n;
    k.e.camera = camera_;
    for (const char* kind : kKinds) {
      *written_flag(k.e, kind) = k.sizes.count(kind) > 0;
      *path_field(k.e, kind) = path_of(n, kind);
    }
    k.e.bytes = k.total() - (k.sizes.count("event") ? k.sizes["event"] : 0);
    counters_.bytes_on_disk += k.total();
  }
  std::lock_guard<std::mutex> lock(mu_);
  apply_retention_locked(0);
}

EventRecord EvidenceStore::begin(EventRecord e) {
  std::lock_guard<std::mutex> lock(mu_);
  e.n = next_n_++;
  e.camera = camera_;
  e.wall_ms = now_ms();
  e.snapshot = path_of(e.n, "snapshot");
  e.crop = path_of(e.n, "crop");
  e.clip = path_of(e.n, "clip");
  e.snapshot_written = e.crop_written = e.clip_written = false;
  e.clip_seconds = 0;
  e.bytes = 0;
  e.errors.clear();
  kept_[e.n].e = e;
  counters_.events++;
  apply_retention_locked(e.n);
  return e;
}

bool EvidenceStore::write(std::uint64_t n, const std::string& kind, const std::uint8_t* data,
                          std::size_t size, double clip_seconds) {
  delete_doomed();
  if (!known_kind(kind))
    return fail(n, kind, "unknown evidence kind '" + printable(kind, 20) + "'");
  if (const std::string why = folder_->replaced(); !why.empty())
    return fail(n, kind, path_of(n, kind) + ": " + why);
  const std::string tmp = temp_name();
  const int fd = folder_->create(tmp);
  if (fd < 0) return fail(n, kind, sys_error(path_of(n, kind), errno));
  int err = write_all(fd, data, size);
  // On disk before it has its name: a crash never leaves a named empty file.
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (err) {
    folder_->remove(tmp);
    return fail(n, kind, sys_error(path_of(n, kind), err));
  }
  return land(n, kind, tmp, size, clip_seconds);
}

bool EvidenceStore::adopt(std::uint64_t n, const std::string& kind, const std::string& written_path,
                          double clip_seconds) {
  delete_doomed();
  if (!known_kind(kind))
    return fail(n, kind, "unknown evidence kind '" + printable(kind, 20) + "'");
  struct stat st;
  if (::lstat(written_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::unlink(written_path.c_str());
    return fail(n, kind, written_path + ": " + (err ? std::strerror(err) : "not a regular file"));
  }
  if (const std::string why = folder_->replaced(); !why.empty()) {
    ::unlink(written_path.c_str());
    return fail(n, kind, path_of(n, kind) + ": " + why);
  }
  // The muxer created it with the umask's mode (usually 0644): evidence
  // files are 0640 however they were written.
  ::chmod(written_path.c_str(), 0640);
  const std::string tmp = temp_name();
  if (folder_->move_in(written_path, tmp) != 0) {
    // Another file system (the muxer wrote under /tmp): copy it over.
    std::vector<std::uint8_t> bytes;
    try {
      const std::string text = read_regular_file(written_path, "evidence " + kind, 1ull << 32);
      bytes.assign(text.begin(), text.end());
    } catch (const std::exception& e) {
      ::unlink(written_path.c_str());
      return fail(n, kind, e.what());
    }
    ::unlink(written_path.c_str());
    return write(n, kind, bytes.data(), bytes.size(), clip_seconds);
  }
  return land(n, kind, tmp, static_cast<std::uint64_t>(st.st_size), clip_seconds);
}

int EvidenceStore::create_temp(std::uint64_t n, const std::string& kind, std::string* name) {
  delete_doomed();
  if (const std::string why = folder_->replaced(); !why.empty()) {
    fail(n, kind, path_of(n, kind) + ": " + why);
    return -1;
  }
  *name = temp_name();
  const int fd = folder_->create(*name);
  if (fd < 0) fail(n, kind, sys_error(path_of(n, kind), errno));
  return fd;
}

bool EvidenceStore::adopt_temp(std::uint64_t n, const std::string& kind, const std::string& name,
                               double clip_seconds) {
  if (const std::string why = folder_->replaced(); !why.empty()) {
    folder_->remove(name);
    return fail(n, kind, path_of(n, kind) + ": " + why);
  }
  return land(n, kind, name, folder_->size(name), clip_seconds);
}

void EvidenceStore::discard_temp(const std::string& name) {
  folder_->remove(name);
}

// The rename under the lock: retention cannot delete the event between the
// check and the file getting its name.
bool EvidenceStore::land(std::uint64_t n, const std::string& kind, const std::string& tmp,
                         std::uint64_t size, double clip_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kept_.find(n);
  if (it == kept_.end()) {
    // Pruned (or never begun): the file has no event to belong to.
    folder_->remove(tmp);
    return false;
  }
  const std::string dest = path_of(n, kind);
  if (const int err = folder_->rename(tmp, name_of(n, kind)); err != 0) {
    folder_->remove(tmp);
    counters_.write_failures++;
    counters_.last_error = sys_error(dest, err);
    it->second.e.errors[kind] = counters_.last_error;
    write_record_locked(it->second, false);
    return false;
  }
  Kept& k = it->second;
  const std::uint64_t before = k.total();
  k.sizes[kind] = size;
  EventRecord& e = k.e;
  *written_flag(e, kind) = true;
  e.errors.erase(kind);
  if (kind == "clip") e.clip_seconds = clip_seconds;
  e.bytes = k.total() - (k.sizes.count("event") ? k.sizes["event"] : 0);
  counters_.bytes_on_disk += k.total() - before;
  (kind == "snapshot" ? counters_.snapshots : kind == "crop" ? counters_.crops : counters_.clips)++;
  write_record_locked(k, true);
  apply_retention_locked(n);
  return true;
}

bool EvidenceStore::fail(std::uint64_t n, const std::string& kind, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.write_failures++;
  counters_.last_error = why;
  auto it = kept_.find(n);
  if (it != kept_.end()) {
    it->second.e.errors[kind] = why;
    write_record_locked(it->second, false);
  }
  return false;
}

void EvidenceStore::count_failure(std::uint64_t n, const std::string& kind,
                                  const std::string& why) {
  delete_doomed();
  fail(n, kind, why);
}

// The record beside the files, so a later run (and a person with `ls`)
// knows what each event was. Small; a failure is counted like any file's,
// except right after a media file's own failure (`counted` false): one loss,
// one count, and last_error names the media file.
void EvidenceStore::write_record_locked(Kept& k, bool counted) {
  const std::string text = to_json(k.e).dump(1) + "\n";
  const std::string dest = path_of(k.e.n, "event");
  const std::string tmp = temp_name_locked();
  const int fd = folder_->create(tmp);
  int err = fd < 0 ? errno
                   : write_all(fd, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;
  if (!err) err = folder_->rename(tmp, name_of(k.e.n, "event"));
  if (err) {
    folder_->remove(tmp);
    if (counted) {
      counters_.write_failures++;
      counters_.last_error = sys_error(dest, err);
    }
    return;
  }
  const std::uint64_t before = k.sizes.count("event") ? k.sizes["event"] : 0;
  k.sizes["event"] = text.size();
  counters_.bytes_on_disk += text.size() - before;
}

// Oldest first, whole events at a time, never `keep_n` (the event just
// begun or just written: a limit smaller than one event keeps that one).
void EvidenceStore::apply_retention_locked(std::uint64_t keep_n) {
  while (!kept_.empty()) {
    const bool too_many = kept_.size() > settings_.max_events;
    const bool too_big = counters_.bytes_on_disk > settings_.max_bytes;
    if (!too_many && !too_big) return;
    auto oldest = kept_.begin();
    if (oldest->first == keep_n) {
      if (kept_.size() == 1) return;
      ++oldest;
    }
    remove_event_locked(oldest);
  }
}

void EvidenceStore::remove_event_locked(std::map<std::uint64_t, Kept>::iterator it) {
  for (const auto& [kind, size] : it->second.sizes) doomed_.push_back(name_of(it->first, kind));
  counters_.bytes_on_disk -= std::min(counters_.bytes_on_disk, it->second.total());
  counters_.pruned_events++;
  kept_.erase(it);
}

void EvidenceStore::delete_doomed() {
  std::vector<std::string> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    doomed.swap(doomed_);
  }
  for (const auto& name : doomed) folder_->remove(name);
}

std::vector<EventRecord> EvidenceStore::list(std::size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<EventRecord> out;
  for (auto it = kept_.rbegin(); it != kept_.rend() && out.size() < max; ++it)
    out.push_back(it->second.e);
  return out;
}

std::optional<EventRecord> EvidenceStore::find(std::uint64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kept_.find(n);
  if (it == kept_.end()) return std::nullopt;
  return it->second.e;
}

EventState EvidenceStore::state(std::uint64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.count(n)) return EventState::kKept;
  return n >= 1 && n < next_n_ ? EventState::kPruned : EventState::kUnknown;
}

EvidenceCounters EvidenceStore::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace torchinfer::evidence
