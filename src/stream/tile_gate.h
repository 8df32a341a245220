// inference-region=tiles with inference-gate=motion: each tile of a large
// frame is judged on its own, so that a 12 MP belt where one part moves
// costs the tiles around that part, not the 40-odd tiles of the frame.
//
// A tile is judged like a frame by MotionGate (motion_gate.h), on the luma
// samples inside it, against *its own* reference: its samples when it was
// last inferred. Tiles overlap, so a shared reference would let one tile's
// inference hide a change from its neighbour. Per tile: motion when
// min_area of its cells (at least one) changed by `threshold`; `hold`
// tiles-frames after motion are inferred whatever their difference; and a
// tile is inferred at least every `keyframe_interval` frames. The tiles'
// first keyframes are staggered over that interval, so a still scene costs
// about one tile's share of the frame each frame, not every tile at once.
//
// The caller commit()s once the frame went to the model: the tiles that
// were not still take the frame's samples as their reference. Not
// thread-safe: one stream's streaming thread uses it.
#pragma once

#include <cstdint>
#include <vector>

#include "stream/motion_gate.h"
#include "stream/regions.h"

namespace torchinfer {

class TileGate {
 public:
  TileGate() = default;
  // Throws Error(kInvalidArgument) for options out of range.
  explicit TileGate(const MotionGateOptions& options);

  // One decision per tile (frame pixels; clipped to the frame), in order.
  // New tiles or a new frame size start afresh (kFirst); so does a frame
  // whose pixels cannot be read (every tile kFirst, nothing to commit).
  const std::vector<GateDecision>& decide(const FrameView& frame,
                                          const std::vector<RegionOfInterest>& tiles);
  // The last decide()'s decisions.
  const std::vector<GateDecision>& decisions() const { return decisions_; }
  // The frame decide() last judged went to the model.
  void commit();
  // Forget every reference (a seek, a flush).
  void reset();

 private:
  struct Tile {
    std::int64_t x = 0, y = 0, width = 0, height = 0;  // as given
    int c0 = 0, r0 = 0, cols = 0, rows = 0;            // its samples
    std::vector<std::uint8_t> reference;               // empty: none yet
    int hold_left = 0;
    int since_inferred = 0;
  };
  void layout(const std::vector<RegionOfInterest>& tiles, int width, int height);
  GateDecision judge(Tile& t);

  MotionGateOptions opts_;
  std::vector<Tile> tiles_;
  std::vector<GateDecision> decisions_;
  std::vector<std::uint8_t> current_;
  std::vector<int> sums_;
  int width_ = 0, height_ = 0, cols_ = 0, rows_ = 0;
  bool sampled_ = false;  // current_ holds the judged frame's samples
};

}  // namespace torchinfer
