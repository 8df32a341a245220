// Inference on regions of interest (inference-region=roi-list): which of a
// frame's regions go to the model and with which pixels, and the bounded
// per-stream memory of tracked objects that lets a result be reused
// (reclassify-interval). No GStreamer types: the owner lists the regions it
// found on the frame (ROI metas) in its own order and gets one RegionResult
// per region back, in that order, carrying the id the owner gave the region
// (its ROI meta's) so that results are attached by id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "preprocess/preprocess.h"

namespace torchinfer {

// One region as the owner found it, in frame pixels; it may extend past
// the frame (it is clipped here).
struct RegionOfInterest {
  std::int64_t x = 0, y = 0, width = 0, height = 0;
  std::string label;                      // what object-class filters on
  std::optional<std::int64_t> object_id;  // the tracker's id, if any
  int roi_id = -1;                        // the owner's id of the region (its ROI meta's)
  // The detection's rotated box (torchnms yolov8-obb), frame pixels; the
  // axis-aligned box above is around it.
  std::optional<RotatedBox> rotated;
};

struct RegionOptions {
  std::vector<std::string> classes;  // labels to infer; empty = every label
  int min_size = 0;                  // both sides of the clipped box, pixels
  double padding = 0;                // each side grows by padding x the box's size
  int reclassify_interval = 1;       // tracked objects: infer every Nth frame
  bool deskew = true;                // a region with a rotated box: its deskewed crop
};

// Parses object-class ("a, b,c"): labels trimmed, empty ones dropped.
std::vector<std::string> parse_class_list(const std::string& text);

// What became of a region, in the order the checks run.
enum class RegionFate {
  kFiltered,     // its label is not in object-class
  kOutside,      // zero-size, or nothing left inside the frame after clipping
  kTooSmall,     // clipped box narrower or lower than min-object-size
  kInferred,     // sent to the model: `slot` holds its result once delivered
  kReuse,        // tracked, not due (reclassify-interval, or the frame was not
                 // inferred): carries its latest result when there is one
  kNotInferred,  // untracked on a frame not inferred (inference-interval)
};
const char* to_string(RegionFate f);

struct RegionResult {
  RegionFate fate = RegionFate::kFiltered;
  Crop box;  // pixels fed to the model: padded, clipped (kInferred and kReuse);
             // deskewed (box.rotated set) for a rotated region with deskew
  std::optional<std::int64_t> object_id;
  int roi_id = -1;  // RegionOfInterest::roi_id
  // Index into FrameInference::slots of the result to attach (-1: none):
  // its own (kInferred, once delivered) or a copy of the object's latest
  // result (reused = true).
  int slot = -1;
  bool reused = false;
  // inference-region=tiles with inference-gate=motion: the tile gate
  // judged this tile still (it carries its latest result).
  bool still = false;
  std::uint64_t result_pts = ~std::uint64_t{0};  // PTS of the frame the result was computed on
};

// Label filter, clipping, min-object-size and padding of one region; fate
// is kInferred for a region that may go to the model (the caller decides
// reuse).
RegionResult plan_region(const RegionOfInterest& roi, const RegionOptions& opts, int frame_width,
                         int frame_height);

// Per-object values keyed by track id, forgetting objects not seen for
// `forget_after` frames and never holding more than `max_objects` (the
// least recently seen go first): a stream with endless new ids stays
// bounded.
template <class V>
class ObjectMemory {
 public:
  ObjectMemory(std::uint64_t forget_after, std::size_t max_objects)
      : forget_after_(forget_after), max_objects_(max_objects) {}

  // Marks `id` as seen on frame `frame`; returns its entry (nullptr if none).
  V* touch(std::int64_t id, std::uint64_t frame) {
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    it->second.seen = frame;
    return &it->second.value;
  }
  void put(std::int64_t id, std::uint64_t frame, V value) {
    map_[id] = Entry{frame, std::move(value)};
    if (map_.size() > max_objects_) evict_oldest();
  }
  // Drops objects not seen for forget_after frames; call once per frame.
  void forget_stale(std::uint64_t frame) {
    if (frame % 16 != 0) return;  // amortised: a scan every 16 frames
    for (auto it = map_.begin(); it != map_.end();)
      it = frame - it->second.seen > forget_after_ ? map_.erase(it) : std::next(it);
  }
  void clear() { map_.clear(); }
  std::size_t size() const { return map_.size(); }

 private:
  struct Entry {
    std::uint64_t seen = 0;
    V value;
  };
  void evict_oldest() {
    auto oldest = map_.begin();
    for (auto it = map_.begin(); it != map_.end(); ++it)
      if (it->second.seen < oldest->second.seen) oldest = it;
    map_.erase(oldest);
  }
  std::uint64_t forget_after_;
  std::size_t max_objects_;
  std::unordered_map<std::int64_t, Entry> map_;
};

// How long a stream remembers an object it no longer sees, in frames, and
// how many it remembers at most.
std::uint64_t object_forget_frames(int reclassify_interval, int inference_interval);
constexpr std::size_t kMaxRememberedObjects = 4096;

}  // namespace torchinfer
