// Object-detection decoders: model output tensors -> boxes in frame pixels.
//
// Layouts (dims may carry the leading batch dimension of 1, or omit it):
//   yolov5  one tensor [1, A, 5+C]: cx, cy, w, h (model-input pixels),
//           objectness, C class scores; score = objectness * class score.
//   yolov8  one tensor [1, 4+C, A]: cx, cy, w, h (model-input pixels), C class
//           scores (no objectness).
//   yolov8-seg  two tensors: [1, 4+C+M, A] decoded as yolov8 over its C
//           class channels, and prototypes [1, M, h, w] for the masks
//           (decode/yolov8_seg.h).
//   yolov8-obb  one tensor [1, 4+C+1, A]: as yolov8 plus the angle in
//           radians; rotated boxes and rotated NMS (decode/yolov8_obb.h).
//   ssd     two tensors, "boxes" [1, A, 4] and "scores" [1, A, C] (by name, else
//           the first two outputs in that order): boxes are x_min, y_min,
//           x_max, y_max normalised to the model input (0..1); scores are
//           per-class probabilities with class 0 = background (skipped), so
//           label ids are 0-based over classes 1..C-1.
// Every anchor keeps its best class (scores tied keep the lower id). Anchors
// with a non-finite score or box, a score below confidence_threshold or not
// above 0, or an empty box are dropped; NMS (cv::dnn::NMSBoxes) runs in model-input
// coordinates, as the models were trained, per class unless class_agnostic;
// survivors are mapped to the frame, clipped to it, and the
// max_detections best kept, highest confidence first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/box.h"
#include "common/model_config.h"
#include "common/rotated_box.h"
#include "common/tensor.h"

namespace torchinfer {

struct Detection {
  int label_id = -1;
  std::string label;
  double confidence = 0;
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;  // frame pixels, clipped
  // The candidate's index in the model output (yolov8-seg: where its mask
  // coefficients are); -1 when not decoded from a tensor.
  long long anchor = -1;
  Box box() const { return {x_min, y_min, x_max, y_max}; }
  // yolov8-obb only (decode/yolov8_obb.h): the rotated box, frame pixels,
  // unclipped; the box above is its bounds clipped to the frame.
  std::optional<RotatedBox> rotated;
};

struct DetectionOptions {
  double confidence_threshold = 0.25;  // kept if score >= threshold
  double iou_threshold = 0.45;         // suppressed if IoU > threshold
  int max_detections = 100;
  bool class_agnostic = false;
  std::vector<std::string> labels;  // ids past the end are named by number
};

// model = frame * scale + offset (per axis), as the preprocessor recorded it.
struct FrameMapping {
  double scale_x = 1, scale_y = 1, offset_x = 0, offset_y = 0;
  int frame_width = 0, frame_height = 0;
  int input_width = 0, input_height = 0;  // model input, for SSD's normalised boxes
};

// Throws Error(kStreamData) naming the decoder, the expected layout and
// the tensors found when the outputs do not fit; call once per stream and
// report it once.
void check_detection_layout(Decoder decoder, const std::vector<TensorView>& outputs);

// Detections of one frame, best first. Throws like check_detection_layout.
std::vector<Detection> decode_detections(Decoder decoder, const std::vector<TensorView>& outputs,
                                         const DetectionOptions& options,
                                         const FrameMapping& mapping);

// "[1, 8, 100] float32", for messages.
std::string describe(const TensorView& t);

}  // namespace torchinfer
