#include "stream/tile_gate.h"

#include <algorithm>

namespace torchinfer {
namespace {

// The samples whose frame position lies in [begin, end): [*first, *first + *count).
void samples_in(std::int64_t begin, std::int64_t end, int samples, int size, int* first,
                int* count) {
  int i = 0;
  while (i < samples && luma_sample_at(i, size) < begin) ++i;
  int j = i;
  while (j < samples && luma_sample_at(j, size) < end) ++j;
  *first = i;
  *count = j - i;
}

}  // namespace

TileGate::TileGate(const MotionGateOptions& options) : opts_(options) {
  check_gate_options(opts_);
}

void TileGate::layout(const std::vector<RegionOfInterest>& tiles, int width, int height) {
  bool same = width == width_ && height == height_ && tiles.size() == tiles_.size();
  for (std::size_t i = 0; same && i < tiles.size(); ++i)
    same = tiles[i].x == tiles_[i].x && tiles[i].y == tiles_[i].y &&
           tiles[i].width == tiles_[i].width && tiles[i].height == tiles_[i].height;
  if (same) return;
  width_ = width;
  height_ = height;
  tiles_.assign(tiles.size(), Tile{});
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    Tile& t = tiles_[i];
    const RegionOfInterest& r = tiles[i];
    t.x = r.x, t.y = r.y, t.width = r.width, t.height = r.height;
    samples_in(r.x, r.x + r.width, cols_, width, &t.c0, &t.cols);
    samples_in(r.y, r.y + r.height, rows_, height, &t.r0, &t.rows);
  }
}

GateDecision TileGate::judge(Tile& t) {
  // No reference yet, or a tile too small to hold a sample: inferred.
  if (t.reference.empty() || t.cols == 0 || t.rows == 0) return GateDecision::kFirst;
  const std::uint8_t* cur = current_.data() + static_cast<std::size_t>(t.r0) * cols_ + t.c0;
  const int changed = changed_cells(t.reference.data(), t.cols, cur, cols_, t.cols, t.rows,
                                    opts_.threshold, &sums_);
  if (changed >= cells_needed(opts_.min_area, static_cast<int>(sums_.size()))) {
    t.hold_left = opts_.hold;
    return GateDecision::kMotion;
  }
  if (t.hold_left > 0) {
    --t.hold_left;
    return GateDecision::kHold;
  }
  if (t.since_inferred + 1 >= opts_.keyframe_interval) return GateDecision::kKeyframe;
  ++t.since_inferred;
  return GateDecision::kStill;
}

const std::vector<GateDecision>& TileGate::decide(const FrameView& frame,
                                                  const std::vector<RegionOfInterest>& tiles) {
  decisions_.assign(tiles.size(), GateDecision::kFirst);
  sampled_ = sample_luma(frame, opts_.input_bits, &current_, &cols_, &rows_);
  if (!sampled_) {
    reset();
    return decisions_;
  }
  layout(tiles, frame.width, frame.height);
  for (std::size_t i = 0; i < tiles_.size(); ++i) decisions_[i] = judge(tiles_[i]);
  return decisions_;
}

void TileGate::commit() {
  if (!sampled_) return;
  const int n = static_cast<int>(tiles_.size());
  for (int i = 0; i < n; ++i) {
    Tile& t = tiles_[static_cast<std::size_t>(i)];
    if (decisions_[static_cast<std::size_t>(i)] == GateDecision::kStill) continue;
    // A tile's first keyframe comes i/n of the interval early: staggered.
    t.since_inferred = t.reference.empty() ? (i * opts_.keyframe_interval) / std::max(n, 1) : 0;
    t.reference.resize(static_cast<std::size_t>(t.cols) * t.rows);
    for (int j = 0; j < t.rows; ++j)
      std::copy_n(current_.data() + static_cast<std::size_t>(t.r0 + j) * cols_ + t.c0, t.cols,
                  t.reference.data() + static_cast<std::size_t>(j) * t.cols);
  }
}

void TileGate::reset() {
  tiles_.clear();
  width_ = height_ = 0;
}

}  // namespace torchinfer
