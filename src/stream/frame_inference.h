// What a stream session hands back for a frame: the results of its batch
// slots (one for full-frame inference, one per inferred region in roi-list
// mode), and the interface through which it reads the frame's pixels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batching/batcher.h"
#include "preprocess/preprocess.h"
#include "stream/regions.h"

namespace torchinfer {

constexpr std::uint64_t kNoTimestamp = ~std::uint64_t{0};

// One slot's result: what the batcher returned for the pixels it was given.
struct SlotResult {
  FrameResult result;
  FrameTransform transform;  // frame pixels -> model input
  double preprocess_ms = 0;
  bool delivered = false;  // the batch ran (result or error); false: never ran
};

// A frame's inference results on their way to the output thread.
struct FrameInference {
  int frame_width = 0, frame_height = 0;
  std::uint64_t pts = kNoTimestamp;  // of the frame the results were computed on
  std::vector<SlotResult> slots;     // full-frame mode: one
  // Region mode: one entry per region the owner passed, in its order.
  bool region_mode = false;
  std::vector<RegionResult> regions;
  // What the preprocessing clamped, summed over the slots inferred on this
  // frame (GRAY16_LE samples above input-bits; preprocess/saturation.h).
  Saturation saturation;

  // Every slot that ran gave a result (at least one ran).
  bool ok() const;
  // The first error of a slot, "" if none.
  std::string error() const;
};

// The pixels of a frame handed to the session, read only when the frame
// goes to the model (the mapping rule: queued_frame.h).
class FramePixels {
 public:
  virtual ~FramePixels() = default;
  // False when the pixels cannot be read.
  virtual bool map(FrameView* view) = 0;
  virtual void unmap() = 0;
};

}  // namespace torchinfer
