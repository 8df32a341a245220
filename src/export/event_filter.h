// Which frames are events worth a message when only changes matter
// (torchpublish mode=detections): a frame whose own inference found at least
// one detection (or that carries detections from another element and no
// torchinfer result), or whose top-1 class differs from the previous
// inferred frame's (the first classified frame counts as a change), or on
// which a track started or ended (torchtrack), or an object crossed a line or
// entered or left a zone (torchanalytics). Frames that reuse an earlier
// result (inferred = false) are not, unless a track started or ended or an
// analytics event happened there: they would repeat what was already sent.
// is_change() is the narrower test of torchpublish mode=events: a track
// started or ended, or a crossing, entry or exit, on this frame.
#pragma once

#include <optional>

#include "export/frame_record.h"

namespace torchinfer {

class EventFilter {
 public:
  bool is_event(const FrameRecord& r);
  void reset() { last_top1_.reset(); }
  static bool is_change(const FrameRecord& r) {
    return !r.track_events.empty() || (r.analytics && !r.analytics->events.empty());
  }

 private:
  std::optional<int> last_top1_;  // label_id of the last inferred frame with a classification
};

}  // namespace torchinfer
