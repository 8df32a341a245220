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

int luma_sample_at(int i, int size) {
  return at(i, size);
}

bool sample_luma(const FrameView& f, int input_bits, std::vector<std::uint8_t>* out, int* cols,
                 int* rows) {
  *cols = *rows = 0;
  if (f.width <= 0 || f.height <= 0 || !f.planes[0]) return false;
  *cols = ceil_div(f.width, MotionGate::kStep);
  *rows = ceil_div(f.height, MotionGate::kStep);
  out->resize(static_cast<std::size_t>(*cols) * *rows);
  const int shift = input_bits - 8;
  for (int j = 0; j < *rows; ++j)
    sample_row(f, at(j, f.height), *cols, shift, out->data() + static_cast<std::size_t>(j) * *cols);
  return true;
}

MotionGate::MotionGate(const MotionGateOptions& options) : opts_(options) {
  check_gate_options(opts_);
}

void check_gate_options(const MotionGateOptions& o) {
  if (!(o.threshold >= 0 && o.threshold <= 255))
    throw Error(ErrorKind::kInvalidArgument,
                "motion-threshold must be 0..255 (mean luma levels per cell)");
  if (!(o.min_area >= 0 && o.min_area <= 1))
    throw Error(ErrorKind::kInvalidArgument, "motion-min-area must be a fraction 0..1");
  if (o.hold < 0) throw Error(ErrorKind::kInvalidArgument, "motion-hold must be >= 0");
  if (o.keyframe_interval < 1)
    throw Error(ErrorKind::kInvalidArgument, "motion-keyframe-interval must be >= 1");
  if (o.input_bits < 8 || o.input_bits > 16)
    throw Error(ErrorKind::kInvalidArgument, "input-bits must be 8..16");
}

bool MotionGate::sample(const FrameView& f) {
  cur_width_ = cur_height_ = 0;
  if (!sample_luma(f, opts_.input_bits, &current_, &cols_, &rows_)) return false;
  cur_width_ = f.width;
  cur_height_ = f.height;
  cells_x_ = ceil_div(cols_, kCell);
  cells_y_ = ceil_div(rows_, kCell);
  return true;
}

int changed_cells(const std::uint8_t* reference, int reference_stride, const std::uint8_t* current,
                  int current_stride, int cols, int rows, double threshold,
                  std::vector<int>* sums) {
  const int cells_x = ceil_div(cols, MotionGate::kCell),
            cells_y = ceil_div(rows, MotionGate::kCell);
  sums->assign(static_cast<std::size_t>(cells_x) * cells_y, 0);
  for (int j = 0; j < rows; ++j) {
    const std::uint8_t* a = reference + static_cast<std::ptrdiff_t>(j) * reference_stride;
    const std::uint8_t* b = current + static_cast<std::ptrdiff_t>(j) * current_stride;
    int* cell_row = sums->data() + static_cast<std::size_t>(j / MotionGate::kCell) * cells_x;
    for (int i = 0; i < cols; ++i)
      cell_row[i / MotionGate::kCell] += std::abs(int(a[i]) - int(b[i]));
  }
  int changed = 0;
  for (int cy = 0; cy < cells_y; ++cy)
    for (int cx = 0; cx < cells_x; ++cx) {
      const int k = MotionGate::kCell;
      const int n =
          (std::min(cols, (cx + 1) * k) - cx * k) * (std::min(rows, (cy + 1) * k) - cy * k);
      if ((*sums)[static_cast<std::size_t>(cy) * cells_x + cx] >= threshold * n) ++changed;
    }
  return changed;
}

int cells_needed(double min_area, int cells) {
  return std::max(1, static_cast<int>(std::ceil(min_area * cells - 1e-9)));
}

int MotionGate::count_changed() {
  return torchinfer::changed_cells(reference_.data(), cols_, current_.data(), cols_, cols_, rows_,
                                   opts_.threshold, &sums_);
}

GateDecision MotionGate::decide(const FrameView& frame) {
  changed_ = 0;
  if (!sample(frame) || cur_width_ != width_ || cur_height_ != height_) return GateDecision::kFirst;
  changed_ = count_changed();
  if (changed_ >= cells_needed(opts_.min_area, cells_x_ * cells_y_)) {
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
