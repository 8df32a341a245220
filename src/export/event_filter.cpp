#include "export/event_filter.h"

namespace torchinfer {

bool EventFilter::is_event(const FrameRecord& r) {
  // A track starting or ending is news even on a frame without detections
  // (a lost track ends where its object is gone) or with a reused result
  // (torchtrack tracking-type=zero-term tracks those frames too).
  // A reused result's class does not move the baseline either way.
  const bool analytics_events = r.analytics && !r.analytics->events.empty();
  if (r.has_inference && !r.inferred) return !r.track_events.empty() || analytics_events;
  bool changed = false;
  if (!r.classification.empty()) {
    const int top1 = r.classification.front().label_id;
    changed = !last_top1_ || *last_top1_ != top1;
    last_top1_ = top1;
  }
  return changed || !r.detections.empty() || !r.track_events.empty() || analytics_events;
}

}  // namespace torchinfer
