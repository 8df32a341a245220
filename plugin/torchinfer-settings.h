// Settings of the torchinfer element: property ids, the values users set and
// their conversion to core config overrides. The properties themselves are
// described once, in torchinfer-properties.cpp (torchinfer-properties.h).
#pragma once

#include <gst/gst.h>

#include <mutex>
#include <optional>
#include <string>

#include "common/model_config.h"
#include "common/model_contract.h"
#include "common/stream_stats.h"
#include "engine/engine.h"
#include "preprocess/preprocess.h"
#include "torchinfer-stats.h"

namespace torchinfer::gst {

enum Prop {
  PROP_0,
  PROP_MODEL,
  PROP_MODEL_CONFIG,
  PROP_LABELS,
  PROP_INPUT_WIDTH,
  PROP_INPUT_HEIGHT,
  PROP_CHANNEL_ORDER,
  PROP_MEAN,
  PROP_STD,
  PROP_SCALE,
  PROP_OFFSET,
  PROP_TASK,
  PROP_OUTPUT_ACTIVATION,
  PROP_TOP_K,
  PROP_KEEP_ASPECT_RATIO,
  PROP_PAD_VALUE,
  PROP_RESIZE_METHOD,
  PROP_WARMUP,
  PROP_OPTIMIZE,
  PROP_CROP,
  PROP_MODEL_INSTANCE_ID,
  PROP_FRAMES,
  PROP_LOAD_TIME,
  PROP_LAST_INFERENCE_TIME,
  PROP_THREADS,
  PROP_CORES,
  PROP_PRECISION,
  PROP_INPUT_DTYPE,
  PROP_READ_TIME,
  PROP_OPTIMIZE_TIME,
  PROP_WARMUP_TIME,
  PROP_ACTIVE_PRECISION,
  PROP_BATCH_SIZE,
  PROP_BATCH_TIMEOUT,
  PROP_INFERENCE_INTERVAL,
  PROP_DROP_POLICY,
  PROP_STATS_INTERVAL,
  PROP_DROPPED,
  PROP_FPS,
  PROP_LATENCY_P50,
  PROP_LATENCY_P99,
  PROP_STATS,
  PROP_INPUT_LAYOUT,
  PROP_INFERENCE_REGION,
  PROP_OBJECT_CLASS,
  PROP_MIN_OBJECT_SIZE,
  PROP_OBJECT_PADDING,
  PROP_RECLASSIFY_INTERVAL,
  PROP_PREPROCESS_ON,
  PROP_LANES,
  PROP_INPUT_BITS,
  PROP_SENSITIVITY,
  PROP_ANOMALY_THRESHOLD,
  PROP_ACTIVE_LANES,
  PROP_INFERENCE_GATE,
  PROP_MOTION_THRESHOLD,
  PROP_MOTION_MIN_AREA,
  PROP_MOTION_HOLD,
  PROP_MOTION_KEYFRAME_INTERVAL,
  PROP_TILE_WIDTH,
  PROP_TILE_HEIGHT,
  PROP_TILE_OVERLAP,
  PROP_DESKEW,
};

// Enum values 0 mean "take it from the sidecar".
enum ChannelOrderProp { ORDER_AUTO, ORDER_RGB, ORDER_BGR, ORDER_GRAY };
enum TaskProp { TASK_AUTO, TASK_CLASSIFICATION, TASK_DETECTION, TASK_RAW, TASK_ANOMALY };
enum ActivationProp { ACT_AUTO, ACT_SOFTMAX, ACT_SIGMOID, ACT_NONE };
enum InputDtypeProp { DTYPE_AUTO, DTYPE_FLOAT32, DTYPE_UINT8 };
enum InputLayoutProp { LAYOUT_AUTO, LAYOUT_NCHW, LAYOUT_NHWC };
// What happens to a frame when the model cannot keep up (no batch buffer
// free, or the output queue full).
enum DropPolicy { DROP_AUTO, DROP_BLOCK, DROP_SKIP };
// What one inference covers: the whole frame, each region-of-interest
// meta on it, or each tile of a grid covering it (stream/tiles.h).
enum InferenceRegion { REGION_FULL_FRAME, REGION_ROI_LIST, REGION_TILES };
// Which threads preprocess frames (StreamSession's preprocess_in_batch).
enum PreprocessOn { PREPROCESS_AUTO, PREPROCESS_STREAMING_THREAD, PREPROCESS_INFERENCE_THREADS };
// Which frames due by inference-interval go to the model (stream/motion_gate.h).
enum InferenceGate { GATE_NONE, GATE_MOTION };

struct Settings {
  std::string model, model_config, labels, model_instance_id;
  int input_width = 0, input_height = 0, top_k = 0;
  ChannelOrderProp channel_order = ORDER_AUTO;
  std::string mean, std, offset;  // as the user wrote them; "" = unset
  double scale = 0.0;             // 0 = unset
  TaskProp task = TASK_AUTO;
  ActivationProp activation = ACT_AUTO;
  // The model's preprocessing contract: unset = its sidecar's value, else
  // the default (common/model_contract.h).
  std::optional<bool> keep_aspect_ratio;
  std::optional<int> pad_value;
  ResizeMethod resize_method = ResizeMethod::kArea;
  Crop crop;  // width 0 = whole frame
  int warmup = 3;
  bool optimize = true;
  int threads = 0;                   // 0 = automatic; all lanes together
  int lanes = 0;                     // forward() calls at once (model copies); 0 = auto
  std::optional<std::string> cores;  // unset = not pinned; validated at start
  Precision precision = Precision::kAuto;
  InputDtypeProp input_dtype = DTYPE_AUTO;
  InputLayoutProp input_layout = LAYOUT_AUTO;
  int batch_size = 1;
  guint64 batch_timeout_us = 40000;
  int inference_interval = 1;
  DropPolicy drop_policy = DROP_AUTO;
  guint stats_interval_ms = 0;  // 0 = no periodic message
  InferenceRegion inference_region = REGION_FULL_FRAME;
  std::optional<std::string> object_class;  // roi-list: comma-separated labels; "" = all
  int min_object_size = 0;
  std::optional<double> object_padding;
  int reclassify_interval = 1;
  PreprocessOn preprocess_on = PREPROCESS_AUTO;
  int input_bits = 16;                      // GRAY16_LE: significant bits per sample
  double sensitivity = -1;                  // task anomaly; < 0 = from the sidecar
  std::optional<double> anomaly_threshold;  // task anomaly, raw outputs; unset = sidecar / 0.5
  // inference-gate=motion (MotionGateOptions has the same defaults).
  InferenceGate inference_gate = GATE_NONE;
  double motion_threshold = 8.0;
  double motion_min_area = 0.0;
  int motion_hold = 3;
  int motion_keyframe_interval = 30;
  // inference-region=tiles; unset = the sidecar's tile_*, else 0 (the
  // model's input) and 0.2. The run's copy holds the resolved values.
  std::optional<int> tile_width, tile_height;
  std::optional<double> tile_overlap;
  bool deskew = true;  // roi-list: rotated boxes cut upright

  ConfigOverrides overrides() const;
  ContractOverrides contract_overrides() const;
};

}  // namespace torchinfer::gst
