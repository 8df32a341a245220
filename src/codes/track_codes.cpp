#include "codes/track_codes.h"

namespace torchinfer {

TrackCode& TrackCodes::entry(std::int64_t id, std::uint64_t frame) {
  auto it = tracks_.find(id);
  if (it == tracks_.end()) {
    if (tracks_.size() >= max_tracks_) {
      // The one seen longest ago: a part that has left the line.
      auto oldest = tracks_.begin();
      for (auto j = tracks_.begin(); j != tracks_.end(); ++j)
        if (j->second.last_seen < oldest->second.last_seen) oldest = j;
      tracks_.erase(oldest);
      ++totals_.forgotten;
    }
    it = tracks_.emplace(id, TrackCode{}).first;
  }
  it->second.last_seen = frame;
  return it->second;
}

bool TrackCodes::due(std::int64_t id, std::uint64_t frame) {
  TrackCode& t = entry(id, frame);
  if (!t.read_at) return true;
  const bool stale =
      reread_interval_ > 0 && frame >= *t.read_at && frame - *t.read_at >= reread_interval_;
  if (!stale) ++totals_.skipped_known;
  return stale;
}

void TrackCodes::record(std::optional<std::int64_t> id, std::uint64_t frame, const CodeRead& r) {
  const bool ok = r.status == CodeReadStatus::kRead && !r.codes.empty();
  ++totals_.tried;
  ++(ok ? totals_.read : totals_.failed);
  if (!id) return;
  TrackCode& t = entry(*id, frame);
  ++t.tries;
  if (!ok) {
    ++t.failures;
    return;
  }
  t.code = r.codes.front();
  t.read_at = frame;
}

const TrackCode* TrackCodes::find(std::int64_t id) const {
  auto it = tracks_.find(id);
  return it == tracks_.end() ? nullptr : &it->second;
}

}  // namespace torchinfer
