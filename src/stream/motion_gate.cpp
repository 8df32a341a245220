#include "stream/motion_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/error.h"

namespace torchinfer {
namespace {

constexpr int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// The frame row or column of sample i: the middle of its 8-pixel stretch,
// clipped to the frame (the last stretch may be shorter); always even, so
// that a Bayer mosaic is read at one colour site.
inline int at(int i, int size) {
  return std::min(i * MotionGate::kStep + MotionGate::kStep / 2, size - 1) & ~1;
}

// One row of luma samples (cols of them) from frame row y.
void sample_row(const FrameView& f, int y, int cols, int gray16_shift, std::uint8_t* out) {
  const PixelLayout& l = layout_of(f.format);
  switch (l.kind) {
    case PixelLayout::kRGB: {
      const std::uint8_t* row = f.planes[0] + static_cast<std::ptrdiff_t>(y) * f.strides[0];
      const int step = l.c[0].step;
      for (int i = 0; i < cols; ++i) {
        const std::uint8_t* p = row + at(i, f.width) * step;
        out[i] = static_cast<std::uint8_t>(
            (77 * p[l.c[0].offset] + 150 * p[l.c[1].offset] + 29 * p[l.c[2].offset]) >> 8);
      }
      return;
    }
    case PixelLayout::kGray:
      if (l.sample_bytes == 2) {
        const std::uint8_t* row = f.planes[0] + static_cast<std::ptrdiff_t>(y) * f.strides[0];
        for (int i = 0; i < cols; ++i) {
          const std::uint8_t* p = row + at(i, f.width) * 2;
          const unsigned v = (p[0] | (p[1] << 8)) >> gray16_shift;
          out[i] = static_cast<std::uint8_t>(std::min(v, 255u));
        }
        return;
      }
      [[fallthrough]];
    case PixelLayout::kYUV:
    case PixelLayout::kBayer: {
      // Bayer: x and y are even, so every sample is the mosaic's (0, 0) site.
      const Component& c = l.kind == PixelLayout::kBayer ? Component{0, 1, 0, false} : l.c[0];
      const std::uint8_t* row =
          f.planes[c.plane] + static_cast<std::ptrdiff_t>(y) * f.strides[c.plane] + c.offset;
      for (int i = 0; i < cols; ++i) out[i] = row[at(i, f.width) * c.step];
      return;
    }
  }
}

}  // namespace

MotionGate::MotionGate(const MotionGateOptions& options) : opts_(options) {
  if (!(opts_.threshold >= 0 && opts_.threshold <= 255))
    throw Error(ErrorKind::kInvalidArgument,
                "motion-threshold must be 0..255 (mean luma levels per cell)");
  if (!(opts_.min_area >= 0 && opts_.min_area <= 1))
    throw Error(ErrorKind::kInvalidArgument, "motion-min-area must be a fraction 0..1");
  if (opts_.hold < 0) throw Error(ErrorKind::kInvalidArgument, "motion-hold must be >= 0");
  if (opts_.keyframe_interval < 1)
    throw Error(ErrorKind::kInvalidArgument, "motion-keyframe-interval must be >= 1");
  if (opts_.input_bits < 8 || opts_.input_bits > 16)
    throw Error(ErrorKind::kInvalidArgument, "input-bits must be 8..16");
}

bool MotionGate::sample(const FrameView& f) {
  cur_width_ = cur_height_ = 0;
  if (f.width <= 0 || f.height <= 0 || !f.planes[0]) return false;
  cur_width_ = f.width;
  cur_height_ = f.height;
  cols_ = ceil_div(f.width, kStep);
  rows_ = ceil_div(f.height, kStep);
  cells_x_ = ceil_div(cols_, kCell);
  cells_y_ = ceil_div(rows_, kCell);
  current_.resize(static_cast<std::size_t>(cols_) * rows_);
  const int shift = opts_.input_bits - 8;
  for (int j = 0; j < rows_; ++j)
    sample_row(f, at(j, f.height), cols_, shift,
               current_.data() + static_cast<std::size_t>(j) * cols_);
  return true;
}

int MotionGate::count_changed() {
  std::vector<int>& sums = sums_;
  sums.assign(static_cast<std::size_t>(cells_x_) * cells_y_, 0);
  for (int j = 0; j < rows_; ++j) {
    const std::uint8_t* a = reference_.data() + static_cast<std::size_t>(j) * cols_;
    const std::uint8_t* b = current_.data() + static_cast<std::size_t>(j) * cols_;
    int* cell_row = sums.data() + static_cast<std::size_t>(j / kCell) * cells_x_;
    for (int i = 0; i < cols_; ++i) cell_row[i / kCell] += std::abs(int(a[i]) - int(b[i]));
  }
  int changed = 0;
  for (int cy = 0; cy < cells_y_; ++cy)
    for (int cx = 0; cx < cells_x_; ++cx) {
      const int n = (std::min(cols_, (cx + 1) * kCell) - cx * kCell) *
                    (std::min(rows_, (cy + 1) * kCell) - cy * kCell);
      if (sums[static_cast<std::size_t>(cy) * cells_x_ + cx] >= opts_.threshold * n) ++changed;
    }
  return changed;
}

GateDecision MotionGate::decide(const FrameView& frame) {
  changed_ = 0;
  if (!sample(frame) || cur_width_ != width_ || cur_height_ != height_) return GateDecision::kFirst;
  changed_ = count_changed();
  const int needed =
      std::max(1, static_cast<int>(std::ceil(opts_.min_area * cells_x_ * cells_y_ - 1e-9)));
  if (changed_ >= needed) {
    hold_left_ = opts_.hold;
    return GateDecision::kMotion;
  }
  if (hold_left_ > 0) {
    --hold_left_;
    return GateDecision::kHold;
  }
  if (since_inferred_ + 1 >= opts_.keyframe_interval) return GateDecision::kKeyframe;
  ++since_inferred_;
  return GateDecision::kStill;
}

void MotionGate::commit() {
  if (cur_width_ <= 0) return;  // decide() could not read the frame
  reference_.swap(current_);
  width_ = cur_width_;
  height_ = cur_height_;
  since_inferred_ = 0;
}

void MotionGate::reset() {
  width_ = height_ = 0;
  hold_left_ = 0;
  since_inferred_ = 0;
}

}  // namespace torchinfer
