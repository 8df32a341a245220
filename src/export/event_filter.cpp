#include "export/event_filter.h"

namespace torchinfer {

bool EventFilter::is_event(const FrameRecord& r) {
  if (r.has_inference && !r.inferred) return false;
  bool changed = false;
  if (!r.classification.empty()) {
    const int top1 = r.classification.front().label_id;
    changed = !last_top1_ || *last_top1_ != top1;
    last_top1_ = top1;
  }
  return changed || !r.detections.empty();
}

}  // namespace torchinfer
