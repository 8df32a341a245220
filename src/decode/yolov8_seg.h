// YOLOv8-seg (Ultralytics' instance segmentation layout): boxes decoded as
// yolov8's, plus one mask per kept detection.
//
// Outputs (told apart by rank, in either order; the batch dimension of 1 may
// be omitted):
//   head        [1, 4 + C + M, A]: cx, cy, w, h (model-input pixels), C class
//               scores, M mask coefficients per anchor;
//   prototypes  [1, M, h, w]: M prototype masks over the model input (h, w
//               are usually input / 4; any size maps, by input_size / (h, w)).
// A detection's mask at frame pixel (x, y) of its box: the centre
// (x + 0.5, y + 0.5) is mapped into the model input as boxes are mapped out
// (model = frame * scale + offset, so letterbox padding and crops apply),
// then into prototype cells (u = model_x * w / input_width - 0.5, the
// align_corners=False convention of PyTorch's bilinear resize); the value
// there is the bilinear mix of the four nearest cells' sum_k coef_k *
// proto_k (clamped at the border), and the pixel is set when
// sigmoid(value) > threshold, i.e. value > ln(t / (1 - t)). Only pixels
// whose centre lies in the box [x_min, x_max) x [y_min, y_max) (the
// detection's box in frame pixels, clipped) can be set: the mask is
// cropped to its box. Prototype cells are only computed under the box, and
// masks only for the detections asked for (after NMS).
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor.h"
#include "decode/detection.h"

namespace torchinfer {

// A mask in frame pixels on the grid of its detection's box rounded
// outwards (x, y, width, height), run-length encoded row by row: runs
// alternate background, object, background, ..., starting with background
// (0 when the first pixel is set); they sum to width * height.
struct Mask {
  int x = 0, y = 0, width = 0, height = 0;
  std::vector<std::uint32_t> runs;
  std::uint64_t area = 0;        // pixels set
  std::uint64_t box_pixels = 0;  // pixels whose centre lies in the box: the most area can be
  bool invalid = false;          // NaN/infinite coefficients or prototypes under the box
  bool dropped = false;          // past the frame's run budget: no runs, not computed
};

// The most runs the masks of one frame may hold together (4 Mi runs, 16 MiB):
// a mask sampled from prototypes has a few runs per row, 100 masks of a
// whole 4K frame about 650 k; only hostile prototypes (signs alternating
// cell by cell) come near it. Masks past it are dropped and counted.
constexpr std::size_t kMaxMaskRunsPerFrame = std::size_t{1} << 22;

// What the masks of one frame were like (torchnms counts them).
struct MaskCounts {
  std::uint64_t empty = 0;    // no pixel set (invalid ones included)
  std::uint64_t full = 0;     // every pixel of the box set (area == box_pixels)
  std::uint64_t invalid = 0;  // NaN/infinite values: empty masks
  std::uint64_t dropped = 0;  // past the run budget (Mask::dropped)
};

struct SegmentTensors {
  const TensorView* head = nullptr;
  const TensorView* prototypes = nullptr;
  int classes = 0, coefficients = 0;
};

// The two tensors and the class and coefficient counts. Throws
// Error(kStreamData) naming the layout expected and the tensors found
// (wrong ranks, prototypes' M not leaving at least one class in the head,
// non-float or empty tensors; with labels > 0, a class count other than
// labels: the head's coefficient count is not the prototypes' M).
SegmentTensors segment_tensors(const std::vector<TensorView>& outputs, std::size_t labels = 0);

// The masks of `detections` (decoded from the same outputs by
// decode_detections, so each carries its anchor), in their order.
// threshold lies in 0..1 (0: every pixel of the box, 1: none). The mask
// that takes the frame's runs past max_runs and every later one are
// dropped (best detections keep theirs). Throws like segment_tensors, and
// for an anchor outside the head.
std::vector<Mask> decode_masks(const std::vector<TensorView>& outputs,
                               const std::vector<Detection>& detections, const FrameMapping& m,
                               double threshold, MaskCounts* counts = nullptr,
                               std::size_t max_runs = kMaxMaskRunsPerFrame);

// The runs as a bitmap (row-major, 1 = set) of width * height bytes;
// empty when the runs do not sum to it.
std::vector<std::uint8_t> mask_bitmap(const Mask& mask);

}  // namespace torchinfer
