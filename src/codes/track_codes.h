// "Once per track": the code of each tracked part, read on one of its views
// and then carried until a re-read interval passes. A track not yet read is
// tried on each new view. Every try, read, failure and skip is counted, per
// track and in total. Bounded: past max_tracks the track seen longest ago
// is forgotten (counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "codes/code_reader.h"

namespace torchinfer {

struct CodeTotals {
  std::uint64_t tried = 0;          // views read (tracked or not)
  std::uint64_t read = 0;           // views with a code
  std::uint64_t failed = 0;         // views without one (none found, refused, zxing error)
  std::uint64_t skipped_known = 0;  // views of a track whose code is known and fresh
  std::uint64_t forgotten = 0;      // tracks dropped to stay within max_tracks
  // Reading on workers (code_session.h): reads finished after their frame
  // had gone (a track's code is carried on its later views; an untracked
  // region's or a whole frame's is only counted), and due views not read
  // because the workers were full or the track's read was still running.
  std::uint64_t late = 0;
  std::uint64_t deferred = 0;
};

struct TrackCode {
  std::uint64_t tries = 0, failures = 0;
  std::optional<CodeResult> code;        // the latest code read
  std::optional<std::uint64_t> read_at;  // frame of that read
  std::uint64_t last_seen = 0;           // frame
};

class TrackCodes {
 public:
  // reread_interval: frames after a read before the track is read again;
  // 0 = never again.
  explicit TrackCodes(std::uint64_t reread_interval, std::size_t max_tracks = 4096)
      : reread_interval_(reread_interval), max_tracks_(max_tracks ? max_tracks : 1) {}

  // Whether to read track `id` on frame `frame`; false counts a skip.
  bool due(std::int64_t id, std::uint64_t frame);

  // The outcome of a read `due` asked for; a failed re-read keeps the code
  // read before. A read of no track (nullopt id) only counts.
  void record(std::optional<std::int64_t> id, std::uint64_t frame, const CodeRead& r);

  // The track's state, null if unknown.
  const TrackCode* find(std::int64_t id) const;

  void forget(std::int64_t id) { tracks_.erase(id); }
  void clear() { tracks_.clear(); }

  void count_late() { ++totals_.late; }
  void count_deferred() { ++totals_.deferred; }

  const CodeTotals& totals() const { return totals_; }
  std::size_t tracks() const { return tracks_.size(); }

 private:
  TrackCode& entry(std::int64_t id, std::uint64_t frame);

  std::uint64_t reread_interval_;
  std::size_t max_tracks_;
  std::unordered_map<std::int64_t, TrackCode> tracks_;
  CodeTotals totals_;
};

}  // namespace torchinfer
