// Containment suppression: a detector may find one object twice, a box of
// part of it inside the box of the whole (the demo detector's half-part
// boxes inside a whole-part box of the same class). Their IoU is low (a half
// box inside a whole one: 0.5, under NMS's 0.45 only by luck), so NMS keeps
// both and the tracker makes two objects of one part. This drops a box
// lying mostly inside a bigger box of the same class.
#pragma once

#include <cstddef>
#include <vector>

#include "decode/detection.h"

namespace torchinfer {

// Removes from `dets` (order kept) each box of which at least `fraction` of
// the area lies inside a bigger box of the same label_id (for two boxes of
// the same area, the later one goes: detections come best first). fraction
// <= 0 turns it off. Two rotated boxes (Detection::rotated) compare their
// own outlines, not their bounds. Returns how many were removed.
std::size_t suppress_contained(std::vector<Detection>& dets, double fraction);

}  // namespace torchinfer
