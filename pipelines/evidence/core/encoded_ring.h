// The last seconds of a camera's encoded video, so that a clip can start
// before the event that asks for it (docs/evidence.md). The encoder runs
// anyway for the ring; a clip only copies frames out of it, so recording an
// event costs no second encoder. No GStreamer types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace torchinfer::evidence {

struct EncodedFrame {
  std::int64_t pts_ns = 0, duration_ns = 0;
  bool keyframe = false;
  std::shared_ptr<const std::vector<std::uint8_t>> data;
};

// Thread-safe (one writer, any readers); memory bounded by max_bytes and by
// span_ns of the time its frames carry (the recorder gives running time). Frames leave by whole
// groups (keyframe to the frame before the next one), so that the oldest frame kept is always a
// keyframe: a clip asked from span_ns before the newest frame starts at most
// one group earlier, never later. When max_bytes is reached before span_ns
// has passed, the oldest group leaves early: those frames are counted
// (evicted_early), since clips then come out shorter than asked.
class EncodedRing {
 public:
  EncodedRing(std::int64_t span_ns, std::size_t max_bytes);
  // Frames come in stream order; a frame older than the newest one (a
  // timestamp going back) is kept, it only ends no span early. Frames before
  // the first keyframe cannot be decoded alone and are not kept.
  void push(EncodedFrame f);
  // The frames from the last keyframe at or before from_ns up to to_ns (pts
  // <= to_ns). If the ring no longer reaches back to from_ns, from its
  // oldest frame (a keyframe); empty if nothing is at or before to_ns.
  std::vector<EncodedFrame> extract(std::int64_t from_ns, std::int64_t to_ns) const;
  std::size_t bytes() const;
  std::size_t frames() const;
  std::uint64_t evicted_early() const;  // frames dropped by max_bytes before span_ns passed
  std::int64_t newest_pts() const;      // -1 while empty
  std::int64_t oldest_pts() const;      // -1 while empty

 private:
  void evict_by_span();
  void evict_by_bytes();
  std::size_t pop_group();  // the oldest group; returns its frame count

  const std::int64_t span_ns_;
  const std::size_t max_bytes_;
  mutable std::mutex mu_;
  std::deque<EncodedFrame> frames_;
  std::size_t bytes_ = 0;
  std::uint64_t evicted_early_ = 0;
  std::int64_t newest_ = -1;
};

}  // namespace torchinfer::evidence
