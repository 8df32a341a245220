// The yolov8-obb decoder: Ultralytics' YOLOv8 oriented-box layout -> rotated
// detections in frame pixels, with rotated NMS.
//
// Layout: one float tensor [1, 4 + C + 1, A] (or [4 + C + 1, A]): per anchor
// cx, cy, w, h (model-input pixels), C class scores (no objectness), then
// the angle in radians (any value: it is brought into range here). The
// transposed [1, A, 4 + C + 1] is not accepted (as for yolov8). With labels
// known (sidecar or labels file), the channel count must be 5 + labels:
// a plain yolov8 output ([1, 4 + C, A]) would otherwise be read as
// C - 1 classes and an angle.
//
// Each anchor keeps its best class (ties: lower id). An anchor whose score
// is >= confidence_threshold and > 0 but whose box or angle is not finite,
// or whose width or height is not above 0, is dropped and counted
// (ObbCounts::invalid). NMS runs in model-input coordinates, greedy by
// score (ties: lower anchor index first), per class unless class_agnostic,
// with the exact IoU of the two rotated rectangles (polygon intersection);
// it stops once max_detections survivors inside the frame are found, so
// 8400 candidates cost at most 8400 x max_detections overlaps.
//
// Mapping to the frame (model = frame * scale + offset per axis): the
// centre maps exactly; the width axis maps to the frame and gives the
// angle and width; the height is the mapped area over the width. That is
// exact for equal scales (letterbox, or a square frame) and for angles that
// are multiples of 90 degrees; otherwise the mapped rectangle is a
// parallelogram and this is the rectangle of its width axis and area.
// The result's angle is in degrees, clockwise in image coordinates, in
// [-90, 90) (common/rotated_box.h). The rotated box is not clipped; the
// detection's axis-aligned box is the rotated box's bounds clipped to the
// frame, and a detection whose bounds lie wholly outside the frame is
// dropped like a yolov8 box in the letterbox padding.
#pragma once

#include <cstdint>
#include <vector>

#include "common/rotated_box.h"
#include "common/tensor.h"
#include "decode/detection.h"

namespace torchinfer {

struct ObbCounts {
  std::uint64_t invalid = 0;  // confident anchors with a non-finite or empty box/angle
};

// Throws Error(kStreamData) naming the layout and the tensors found; with
// `labels` > 0 the channel count must be 5 + labels.
void check_obb_layout(const std::vector<TensorView>& outputs, std::size_t labels = 0);

// Detections of one frame, best first, each with `rotated` set. Throws
// like check_obb_layout (with options.labels.size()).
std::vector<Detection> decode_yolov8_obb(const std::vector<TensorView>& outputs,
                                         const DetectionOptions& options,
                                         const FrameMapping& mapping, ObbCounts* counts = nullptr);

// Intersection over union of two rotated rectangles (0 when either is
// empty or not finite).
double rotated_iou(const RotatedBox& a, const RotatedBox& b);
// Their common area (0 when either is empty or not finite).
double rotated_intersection_area(const RotatedBox& a, const RotatedBox& b);

// A rotated box in model-input pixels (angle in degrees) mapped to the frame.
RotatedBox map_rotated_to_frame(const RotatedBox& model_box, const FrameMapping& m);

}  // namespace torchinfer
