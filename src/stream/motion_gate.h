// inference-gate=motion: a frame goes to the model only when something in
// view changed since the last frame that did, so a belt or a parking lot
// that is empty most of the time costs little more than reading its frames.
//
// How a frame is judged (decide()):
//  - the luma of every 8th pixel of every 8th row is read straight from the
//    camera's format (YUY2, NV12, I420, GRAY8 and their kin: the Y samples;
//    RGB kinds: (77 R + 150 G + 29 B) / 256; Bayer: the raw mosaic sample,
//    which at even steps is always the same colour site; GRAY16_LE: the top
//    8 of its input-bits) -- a separate pass, since a still frame is never
//    preprocessed, touching 1/64 of the pixels (docs/tuning.md gives its
//    cost per frame);
//  - that sample plane is cut into cells of 8x8 samples (64x64 frame
//    pixels; cells at the right and bottom edges may be smaller) and each
//    cell's mean absolute difference to the same cell of the *reference*,
//    the last frame that was inferred, is compared with `threshold`, in
//    8-bit luma levels;
//  - motion when at least `min_area` of the cells (a fraction; and at
//    least one cell) reach the threshold.
// Comparing with the last inferred frame rather than the previous one makes
// slow change add up until it counts, and means a still frame's reused
// result describes it: nothing moved since that result was computed.
//
// What is inferred: the first frame (and the first after reset() or a new
// frame size); every frame with motion and the `hold` frames after it
// whatever their difference (a part entering or coming to rest is seen on
// several frames, however slowly it moves); and, as a keyframe, any frame
// that would make `keyframe_interval` frames in a row without inference.
// Everything else is still.
//
// The caller commit()s a frame once it really went to the model (a frame
// skipped as busy after decide() did not): only then does it become the
// reference. Not thread-safe: one stream's streaming thread uses it.
#pragma once

#include <cstdint>
#include <vector>

#include "preprocess/frame.h"

namespace torchinfer {

struct MotionGateOptions {
  bool enabled = false;        // inference-gate=motion
  double threshold = 8.0;      // mean |luma difference| per cell, 0..255 levels
  double min_area = 0.0;       // fraction of the cells, 0..1; at least one cell
  int hold = 3;                // frames inferred after one with motion (>= 0)
  int keyframe_interval = 30;  // the most frames in a row without inference (>= 1)
  int input_bits = 16;         // GRAY16_LE: significant bits per sample
};

// Why decide() said what it said.
enum class GateDecision {
  kFirst,     // no reference yet (first frame, new size, after reset)
  kMotion,    // enough cells changed
  kHold,      // within `hold` frames of a frame with motion
  kKeyframe,  // keyframe_interval reached
  kStill,     // not inferred
};

// The frame row or column of luma sample i: the middle of its kStep-pixel
// stretch, clipped to the frame (the last stretch may be shorter); always
// even, so that a Bayer mosaic is read at one colour site.
int luma_sample_at(int i, int size);

// The frame's luma samples (every 8th pixel of every 8th row, as the gate
// reads them; see above) into `out`, row by row: *cols per row, *rows rows.
// GRAY16_LE keeps the top 8 of input_bits. False, with *cols = *rows = 0,
// for a frame without pixels.
bool sample_luma(const FrameView& frame, int input_bits, std::vector<std::uint8_t>* out, int* cols,
                 int* rows);

// Of the cols x rows samples at `current` (rows current_stride apart), the
// cells of kCell x kCell samples (the last ones may be smaller) whose mean
// absolute difference to the same samples at `reference` reaches
// `threshold`. `sums` is scratch (kept so that a frame allocates nothing).
int changed_cells(const std::uint8_t* reference, int reference_stride, const std::uint8_t* current,
                  int current_stride, int cols, int rows, double threshold, std::vector<int>* sums);

// Changed cells that make motion: min_area of `cells`, at least one.
int cells_needed(double min_area, int cells);

// Throws Error(kInvalidArgument), naming the property, for options out of range.
void check_gate_options(const MotionGateOptions& options);

class MotionGate {
 public:
  static constexpr int kStep = 8;  // sample every kStep-th pixel and row
  static constexpr int kCell = 8;  // cells of kCell x kCell samples

  MotionGate() = default;
  // Throws Error(kInvalidArgument) for options out of range.
  explicit MotionGate(const MotionGateOptions& options);

  // Reads the frame's luma samples and judges it. A frame whose format the
  // gate cannot read is inferred (kFirst).
  GateDecision decide(const FrameView& frame);
  // The frame decide() last judged went to the model: it becomes the
  // reference.
  void commit();
  // Forget the reference (a seek, a flush): the next frame is inferred.
  void reset();

  // The last decide()'s figures: cells at or over the threshold, and cells.
  int changed_cells() const { return changed_; }
  int cells() const { return cells_x_ * cells_y_; }

 private:
  bool sample(const FrameView& frame);
  int count_changed();

  MotionGateOptions opts_;
  std::vector<std::uint8_t> reference_, current_;
  std::vector<int> sums_;       // per cell; kept so that a frame allocates nothing
  int width_ = 0, height_ = 0;  // of the reference (0: none)
  int cur_width_ = 0, cur_height_ = 0;
  int cols_ = 0, rows_ = 0;  // samples per row, sample rows
  int cells_x_ = 0, cells_y_ = 0;
  int hold_left_ = 0;
  int since_inferred_ = 0;  // frames judged still since the last commit
  int changed_ = 0;
};

}  // namespace torchinfer
