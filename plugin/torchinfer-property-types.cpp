#include "torchinfer-property-types.h"

#include "engine/engine.h"
#include "preprocess/preprocess.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {
namespace {

// Registers a static enum type once, thread-safely.
GType register_once(GType* t, const char* name, const GEnumValue* values) {
  if (g_once_init_enter(t)) g_once_init_leave(t, g_enum_register_static(name, values));
  return *t;
}

}  // namespace

GType channel_order_type() {
  static GType t = 0;
  static const GEnumValue values[] = {{ORDER_AUTO, "From the model config (default rgb)", "auto"},
                                      {ORDER_RGB, "RGB", "rgb"},
                                      {ORDER_BGR, "BGR", "bgr"},
                                      {ORDER_GRAY, "Single grey channel", "gray"},
                                      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferChannelOrder", values);
}

GType task_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {TASK_AUTO, "From the model config (default classification)", "auto"},
      {TASK_CLASSIFICATION, "Classification: top-k labels are attached", "classification"},
      {TASK_DETECTION, "Detection: tensors for a downstream decoder", "detection"},
      {TASK_RAW, "Raw tensors only", "raw"},
      {TASK_ANOMALY, "Anomaly: a normal/anomalous classification and an anomaly result", "anomaly"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferTask", values);
}

GType activation_type() {
  static GType t = 0;
  static const GEnumValue values[] = {{ACT_AUTO, "From the model config (default softmax)", "auto"},
                                      {ACT_SOFTMAX, "Softmax over the class scores", "softmax"},
                                      {ACT_SIGMOID, "Independent sigmoid per class", "sigmoid"},
                                      {ACT_NONE, "Scores are already probabilities", "none"},
                                      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferActivation", values);
}

GType resize_method_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {static_cast<int>(ResizeMethod::kArea), "Area averaging (best for downscaling)", "area"},
      {static_cast<int>(ResizeMethod::kLinear), "Bilinear", "linear"},
      {static_cast<int>(ResizeMethod::kNearest), "Nearest neighbour", "nearest"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferResizeMethod", values);
}

GType input_dtype_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {DTYPE_AUTO, "From the model config (default float32)", "auto"},
      {DTYPE_FLOAT32, "Normalised float32", "float32"},
      {DTYPE_UINT8, "Raw 0..255 bytes; the model normalises itself", "uint8"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferInputDtype", values);
}

GType input_layout_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {LAYOUT_AUTO, "From the model config (default nchw)", "auto"},
      {LAYOUT_NCHW, "[N,C,H,W] (PyTorch)", "nchw"},
      {LAYOUT_NHWC, "[N,H,W,C] (converted TensorFlow/Keras models)", "nhwc"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferInputLayout", values);
}

GType drop_policy_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {DROP_AUTO, "skip when the source is live, block otherwise", "auto"},
      {DROP_BLOCK, "Wait for the model: every frame is inferred (files, tests)", "block"},
      {DROP_SKIP,
       "Frames that arrive while the model is busy pass through without inference (live "
       "cameras: latency stays bounded)",
       "skip"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferDropPolicy", values);
}

GType precision_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {static_cast<int>(Precision::kAuto),
       "int8 for quantized models; else fp32, or bf16 where it wins every timed round by "
       "15 % (AVX512-BF16 CPUs; decided once per model, CPU and settings, then cached)",
       "auto"},
      {static_cast<int>(Precision::kFp32), "32-bit float", "fp32"},
      {static_cast<int>(Precision::kInt8),
       "8-bit integer (needs a model quantized by models/quantize.py)", "int8"},
      {static_cast<int>(Precision::kBf16),
       "bfloat16 (AVX512-BF16/AMX); falls back to fp32 with a warning where not faster", "bf16"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferPrecision", values);
}

GType inference_region_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {REGION_FULL_FRAME, "One inference per frame, on the whole frame (or crop)", "full-frame"},
      {REGION_ROI_LIST,
       "One inference per region-of-interest meta on the frame; the result goes on the ROI",
       "roi-list"},
      {REGION_TILES,
       "One inference per tile of a grid covering the frame (tile-width, tile-height, "
       "tile-overlap), batched; torchnms merges the tiles' detections",
       "tiles"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferInferenceRegion", values);
}

GType preprocess_on_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {PREPROCESS_AUTO,
       "inference-threads when they take every core this process may use, else streaming-thread",
       "auto"},
      {PREPROCESS_STREAMING_THREAD,
       "Each stream's own thread, overlapping the model's forward() on a spare core",
       "streaming-thread"},
      {PREPROCESS_INFERENCE_THREADS,
       "The model's inference threads, split over them just before each batch's forward()",
       "inference-threads"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferPreprocessOn", values);
}

GType inference_gate_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {GATE_NONE, "Every frame due by inference-interval is inferred", "none"},
      {GATE_MOTION,
       "Only frames where something moved since the last inferred frame (motion-threshold, "
       "motion-min-area), the motion-hold frames after them and a keyframe every "
       "motion-keyframe-interval frames; the others leave with the latest result, skipped as "
       "\"still\"",
       "motion"},
      {0, nullptr, nullptr}};
  return register_once(&t, "GstTorchInferInferenceGate", values);
}

}  // namespace torchinfer::gst
