// Evidence of events (a reject on the QA line, a new track of a chosen
// class on a server camera): a snapshot, a crop and a short clip per event,
// kept as files in one folder per camera with a retention limit by count and
// by bytes. This is the file side only: the frames come from
// pipelines/evidence/evidence_recorder.h (GStreamer), which calls begin()
// when an event happens and write()/adopt() as each file is ready, off the
// streaming thread. Losing a file (disk full, folder gone) is counted and
// never blocks. No GStreamer here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/field_error.h"
#include "evidence/core/evidence_folder.h"

namespace torchinfer::evidence {

struct EvidenceSettings {
  std::string dir;  // created if missing (mode 0750); must be a directory we can write
  double pre_s = 2.0,
         post_s = 1.0;            // clip from pre_s before to post_s after the event (0..30 each)
  std::size_t max_events = 1000;  // retention: oldest events (all their files) deleted beyond this
  std::uint64_t max_bytes = 1ull << 30;    // retention: ... or beyond this many bytes of files
  std::size_t ring_max_bytes = 64u << 20;  // the encoded ring's memory bound per camera
};

// Parses {"dir":..., "pre_s":..., "post_s":..., "max_events":..., "max_bytes":...,
// "ring_max_bytes":...} (unknown keys refused; ranges checked); throws Error(kConfigInvalid) naming
// `field_path`. A missing "dir" stays empty (the caller fills its own default; the store refuses an
// empty one).
EvidenceSettings parse_evidence_settings(const nlohmann::json& j, const std::string& field_path);
// The keys parse_evidence_settings reads (a caller that adds keys of its own
// to the same object, such as the server's "classes", takes them out first).
const std::vector<std::string>& evidence_setting_keys();
nlohmann::json to_json(const EvidenceSettings& s);

struct EventRecord {
  std::uint64_t n = 0;  // 1, 2, ... per store, assigned by begin(); never reused in one process run
                        // (continues after the highest on disk)
  std::string camera;   // the camera / app id (file-name safe)
  std::string reason;   // "reject", "class:defect", "line:gate:forward", ...
  std::int64_t pts_ns = -1;  // running time of the event (the PTS of a stream played once from 0)
  std::int64_t wall_ms = 0;  // unix ms when begin() ran
  std::int64_t track_id = -1;
  std::string label, verdict;  // class label; "pass"/"reject"/"" (server)
  // What rejected the part (the QA app: its first defect class, "anomaly"
  // for the anomaly model) and that class's score; "" and -1 when none.
  std::string defect;
  double defect_score = -1;
  std::string snapshot, crop,
      clip;  // absolute paths assigned by begin(); a file exists only once written
  bool snapshot_written = false, crop_written = false, clip_written = false;
  double clip_seconds = 0;  // length actually written (vs pre_s+post_s asked)
  std::uint64_t bytes = 0;  // of the files written so far
  // Added to the contract: why a file of this event could not be written,
  // by kind ("clip" -> "<path>: No space left on device").
  std::map<std::string, std::string> errors;
};
nlohmann::json to_json(
    const EventRecord& e);  // the REST/JSON form (paths, flags, clip_seconds, ...)
// The caption drawn on an event's snapshot: "#<track> <label>", then for a
// reject "<defect> <score>" ("#12 washer spot 0.97"), or the verdict when
// no defect is known ("#12 washer reject").
std::string snapshot_caption(const EventRecord& e);
// A reject is drawn in red (an alarm), any other event in green.
inline bool snapshot_alarm(const EventRecord& e) {
  return e.verdict == "reject";
}

// The record back from to_json() (the -event.json files of an earlier run);
// throws Error(kConfigInvalid) when a field is missing or of the wrong type.
EventRecord event_from_json(const nlohmann::json& j);

struct EvidenceCounters {
  std::uint64_t events = 0, snapshots = 0, crops = 0, clips = 0;
  std::uint64_t write_failures =
      0;                            // a file not written (disk full, unwritable, ...): never blocks
  std::uint64_t pruned_events = 0;  // deleted by retention
  std::uint64_t bytes_on_disk = 0;
  std::string last_error;  // "<path>: <strerror>"
};

// Where a lookup by event number stands (find() alone cannot tell a pruned
// event from one that never was).
enum class EventState { kKept, kPruned, kUnknown };

// Thread-safe. Files: DIR/<camera>-<n>-snapshot.jpg, -crop.jpg, -clip.mkv and -event.json (the
// record, rewritten as files land). Writes are tmp file + rename, so readers never see half a file.
// A file refused because the folder was replaced since the start (evidence_folder.h) is a counted
// write failure whose error says so.
class EvidenceStore {
 public:
  EvidenceStore(EvidenceSettings s, std::string camera);  // throws Error naming the dir and the fix
  ~EvidenceStore();
  EvidenceStore(const EvidenceStore&) = delete;
  EvidenceStore& operator=(const EvidenceStore&) = delete;

  const EvidenceSettings& settings() const { return settings_; }
  const std::string& camera() const { return camera_; }
  EventRecord begin(EventRecord e);  // assigns n, wall_ms and the three paths; counts the event;
                                     // applies retention
  // Writes one of the event's files; false (counted, last_error set) on any failure. kind:
  // "snapshot" | "crop" | "clip".
  bool write(std::uint64_t n, const std::string& kind, const std::uint8_t* data, std::size_t size,
             double clip_seconds = 0);
  // Same for a file already written elsewhere (the clip muxer writes to a temp path): renamed into
  // place.
  bool adopt(std::uint64_t n, const std::string& kind, const std::string& written_path,
             double clip_seconds = 0);
  // A file written through a descriptor (the clip muxer's fdsink): a new
  // temporary file in the folder, its descriptor (the caller closes it) and
  // name; -1 (counted against n's `kind`) when the folder cannot take it.
  // Then adopt_temp() gives it its name, or discard_temp() deletes it.
  int create_temp(std::uint64_t n, const std::string& kind, std::string* name);
  bool adopt_temp(std::uint64_t n, const std::string& kind, const std::string& name,
                  double clip_seconds = 0);
  void discard_temp(const std::string& name);
  std::vector<EventRecord> list(std::size_t max = 50) const;  // newest first
  std::optional<EventRecord> find(std::uint64_t n) const;
  EventState state(std::uint64_t n) const;
  EvidenceCounters counters() const;
  // Counts a file lost before it reached the store (the recorder's own
  // losses: an encoder that failed, a clip the ring could not give).
  void count_failure(std::uint64_t n, const std::string& kind, const std::string& why);

 private:
  struct Kept {
    EventRecord e;
    std::map<std::string, std::uint64_t> sizes;  // by kind, "event" for the record itself
    std::uint64_t total() const;
  };
  void load_existing();
  void delete_doomed();
  bool land(std::uint64_t n, const std::string& kind, const std::string& tmp, std::uint64_t size,
            double clip_seconds);
  bool put_file(std::uint64_t n, const std::string& kind, const std::string& tmp,
                std::uint64_t size, double clip_seconds);
  bool fail(std::uint64_t n, const std::string& kind, const std::string& why);
  void write_record_locked(Kept& k, bool counted);
  void apply_retention_locked(std::uint64_t keep_n);
  void remove_event_locked(std::map<std::uint64_t, Kept>::iterator it);
  std::string name_of(std::uint64_t n, const std::string& kind) const;
  std::string path_of(std::uint64_t n, const std::string& kind) const;
  std::string temp_name();
  std::string temp_name_locked();

  // Every file is made, renamed and deleted relative to the folder opened
  // at the start (evidence_folder.h); a folder replaced since is refused.
  const std::unique_ptr<EvidenceFolder> folder_;
  const EvidenceSettings settings_;
  const std::string camera_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, Kept> kept_;  // by n, oldest first
  std::uint64_t next_n_ = 1;            // after the highest assigned or found on disk
  std::uint64_t temp_serial_ = 0;
  EvidenceCounters counters_;
  // Files of pruned events, deleted by the next write (begin() does no I/O:
  // the recorder calls it on the streaming thread).
  std::vector<std::string> doomed_;
};

}  // namespace torchinfer::evidence
