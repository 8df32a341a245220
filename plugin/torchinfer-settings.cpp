#include "torchinfer-settings.h"

#include <cstdio>

#include "common/error.h"

namespace torchinfer::gst {
namespace {

GType channel_order_type() {
  static GType t = 0;
  static const GEnumValue values[] = {{ORDER_AUTO, "From the model config (default rgb)", "auto"},
                                      {ORDER_RGB, "RGB", "rgb"},
                                      {ORDER_BGR, "BGR", "bgr"},
                                      {ORDER_GRAY, "Single grey channel", "gray"},
                                      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferChannelOrder", values));
  return t;
}

GType task_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {TASK_AUTO, "From the model config (default classification)", "auto"},
      {TASK_CLASSIFICATION, "Classification: top-k labels are attached", "classification"},
      {TASK_DETECTION, "Detection: tensors for a downstream decoder", "detection"},
      {TASK_RAW, "Raw tensors only", "raw"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferTask", values));
  return t;
}

GType activation_type() {
  static GType t = 0;
  static const GEnumValue values[] = {{ACT_AUTO, "From the model config (default softmax)", "auto"},
                                      {ACT_SOFTMAX, "Softmax over the class scores", "softmax"},
                                      {ACT_SIGMOID, "Independent sigmoid per class", "sigmoid"},
                                      {ACT_NONE, "Scores are already probabilities", "none"},
                                      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferActivation", values));
  return t;
}

GType resize_method_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {static_cast<int>(ResizeMethod::kArea), "Area averaging (best for downscaling)", "area"},
      {static_cast<int>(ResizeMethod::kLinear), "Bilinear", "linear"},
      {static_cast<int>(ResizeMethod::kNearest), "Nearest neighbour", "nearest"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferResizeMethod", values));
  return t;
}

GType input_dtype_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {DTYPE_AUTO, "From the model config (default float32)", "auto"},
      {DTYPE_FLOAT32, "Normalised float32", "float32"},
      {DTYPE_UINT8, "Raw 0..255 bytes; the model normalises itself", "uint8"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferInputDtype", values));
  return t;
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
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferDropPolicy", values));
  return t;
}

GType precision_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {static_cast<int>(Precision::kAuto),
       "int8 for quantized models; else fp32, or bf16 where timed clearly faster at warm-up",
       "auto"},
      {static_cast<int>(Precision::kFp32), "32-bit float", "fp32"},
      {static_cast<int>(Precision::kInt8),
       "8-bit integer (needs a model quantized by models/quantize.py)", "int8"},
      {static_cast<int>(Precision::kBf16),
       "bfloat16 (AVX512-BF16/AMX); falls back to fp32 with a warning where not faster", "bf16"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferPrecision", values));
  return t;
}

constexpr GParamFlags kRW = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
constexpr GParamFlags kRWReady =
    static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
constexpr GParamFlags kRO = static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

void reject(GParamSpec* pspec, const char* value, const std::string& why) {
  g_warning("torchinfer: rejected value '%s' for property '%s': %s", value ? value : "(null)",
            g_param_spec_get_name(pspec), why.c_str());
}

// "" clears; anything else must parse as 1 or 3 numbers.
bool set_float_list(std::string& field, const GValue* value, GParamSpec* pspec, bool positive) {
  const char* text = g_value_get_string(value);
  std::string s = text ? text : "";
  if (!s.empty()) {
    try {
      for (float v : parse_float_list(s))
        if (positive && !(v > 0.f))
          throw Error(ErrorKind::kConfigInvalid, "values must be positive");
    } catch (const std::exception& e) {
      reject(pspec, text, e.what());
      return false;
    }
  }
  field = s;
  return true;
}

// "x,y,width,height" in frame pixels; "" clears.
bool set_crop(Crop& crop, const GValue* value, GParamSpec* pspec) {
  const char* text = g_value_get_string(value);
  if (!text || !*text) {
    crop = Crop{};
    return true;
  }
  int v[4];
  char tail = 0;
  if (std::sscanf(text, "%d , %d , %d , %d %c", &v[0], &v[1], &v[2], &v[3], &tail) != 4 ||
      v[0] < 0 || v[1] < 0 || v[2] < 1 || v[3] < 1) {
    reject(pspec, text, "expected \"x,y,width,height\" with x,y >= 0 and width,height >= 1");
    return false;
  }
  crop = Crop{v[0], v[1], v[2], v[3]};
  return true;
}

}  // namespace

ConfigOverrides Settings::overrides() const {
  ConfigOverrides o;
  if (input_width > 0) o.input_width = input_width;
  if (input_height > 0) o.input_height = input_height;
  if (top_k > 0) o.top_k = top_k;
  if (channel_order == ORDER_RGB) o.channel_order = ChannelOrder::kRGB;
  if (channel_order == ORDER_BGR) o.channel_order = ChannelOrder::kBGR;
  if (channel_order == ORDER_GRAY) o.channel_order = ChannelOrder::kGray;
  if (!mean.empty()) o.mean = parse_float_list(mean);
  if (!std.empty()) o.std = parse_float_list(std);
  if (!offset.empty()) o.offset = parse_float_list(offset);
  if (scale != 0.0) o.scale = static_cast<float>(scale);
  if (task == TASK_CLASSIFICATION) o.task = Task::kClassification;
  if (task == TASK_DETECTION) o.task = Task::kDetection;
  if (task == TASK_RAW) o.task = Task::kRaw;
  if (activation == ACT_SOFTMAX) o.output_activation = Activation::kSoftmax;
  if (activation == ACT_SIGMOID) o.output_activation = Activation::kSigmoid;
  if (activation == ACT_NONE) o.output_activation = Activation::kNone;
  if (!labels.empty()) o.labels_file = labels;
  if (input_dtype != DTYPE_AUTO) o.input_uint8 = input_dtype == DTYPE_UINT8;
  if (input_layout != LAYOUT_AUTO)
    o.input_layout = input_layout == LAYOUT_NHWC ? InputLayout::kNHWC : InputLayout::kNCHW;
  return o;
}

GType input_layout_type() {
  static GType t = 0;
  static const GEnumValue values[] = {
      {LAYOUT_AUTO, "From the model config (default nchw)", "auto"},
      {LAYOUT_NCHW, "[N,C,H,W] (PyTorch)", "nchw"},
      {LAYOUT_NHWC, "[N,H,W,C] (converted TensorFlow/Keras models)", "nhwc"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&t))
    g_once_init_leave(&t, g_enum_register_static("GstTorchInferInputLayout", values));
  return t;
}

void install_properties(GObjectClass* k) {
  auto str = [&](Prop id, const char* name, const char* nick, const char* blurb) {
    g_object_class_install_property(k, id,
                                    g_param_spec_string(name, nick, blurb, nullptr, kRWReady));
  };
  g_object_class_install_property(
      k, PROP_MODEL,
      g_param_spec_string(
          "model", "Model",
          "TorchScript model file (.pt) saved with torch.jit.trace/script. Setting it while "
          "PAUSED or PLAYING loads the new model in the background and switches to it between "
          "batches (posts \"torchinfer-model-reloaded\"; a model that fails to load leaves the "
          "old one running and posts a warning)",
          nullptr,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                   GST_PARAM_MUTABLE_PLAYING)));
  str(PROP_MODEL_CONFIG, "model-config", "Model config",
      "JSON sidecar describing the model input and output (default: <model>.json beside the model; "
      "without one, torchvision conventions: 224x224 RGB, ImageNet mean/std, classification)");
  str(PROP_LABELS, "labels", "Labels file",
      "Text file with one class label per line (overrides the sidecar)");
  g_object_class_install_property(
      k, PROP_INPUT_WIDTH,
      g_param_spec_int("input-width", "Input width",
                       "Model input width in pixels (0 = from the model config)", 0, 8192, 0,
                       kRWReady));
  g_object_class_install_property(
      k, PROP_INPUT_HEIGHT,
      g_param_spec_int("input-height", "Input height",
                       "Model input height in pixels (0 = from the model config)", 0, 8192, 0,
                       kRWReady));
  g_object_class_install_property(
      k, PROP_CHANNEL_ORDER,
      g_param_spec_enum("channel-order", "Channel order", "Channel order the model expects",
                        channel_order_type(), ORDER_AUTO, kRWReady));
  str(PROP_MEAN, "mean", "Mean",
      "Per-channel mean in 0..1 units, e.g. \"0.485,0.456,0.406\": value = (pixel/255 - mean) / "
      "std");
  str(PROP_STD, "std", "Std",
      "Per-channel standard deviation in 0..1 units, e.g. \"0.229,0.224,0.225\"");
  g_object_class_install_property(
      k, PROP_SCALE,
      g_param_spec_double(
          "scale", "Scale",
          "Alternative to mean/std: value = pixel(0..255) * scale + offset (0 = unset)", -1e6, 1e6,
          0.0, kRWReady));
  str(PROP_OFFSET, "offset", "Offset", "Per-channel offset used with scale, e.g. \"-1,-1,-1\"");
  g_object_class_install_property(k, PROP_TASK,
                                  g_param_spec_enum("task", "Task", "What the model output means",
                                                    task_type(), TASK_AUTO, kRWReady));
  g_object_class_install_property(k, PROP_OUTPUT_ACTIVATION,
                                  g_param_spec_enum("output-activation", "Output activation",
                                                    "How class scores become confidences",
                                                    activation_type(), ACT_AUTO, kRWReady));
  g_object_class_install_property(
      k, PROP_TOP_K,
      g_param_spec_int("top-k", "Top k",
                       "Number of classification results per frame (0 = from the model config, "
                       "default 5)",
                       0, 1000, 0, kRWReady));
  g_object_class_install_property(
      k, PROP_KEEP_ASPECT_RATIO,
      g_param_spec_boolean(
          "keep-aspect-ratio", "Keep aspect ratio",
          "Letterbox: scale the frame to fit the model input and pad the rest with pad-value",
          FALSE, kRWReady));
  g_object_class_install_property(
      k, PROP_PAD_VALUE,
      g_param_spec_int("pad-value", "Pad value",
                       "Letterbox padding, in pixel units 0..255 before normalising", 0, 255, 114,
                       kRWReady));
  g_object_class_install_property(
      k, PROP_RESIZE_METHOD,
      g_param_spec_enum("resize-method", "Resize method",
                        "Interpolation used to resize frames to the model input",
                        resize_method_type(), static_cast<int>(ResizeMethod::kArea), kRWReady));
  g_object_class_install_property(
      k, PROP_WARMUP,
      g_param_spec_int("warmup", "Warm-up runs",
                       "Inference runs on a blank input before the first frame (the JIT "
                       "specialises on the second)",
                       1, 100, 3, kRWReady));
  g_object_class_install_property(
      k, PROP_OPTIMIZE,
      g_param_spec_boolean(
          "optimize", "Optimize",
          "Freeze the model and run optimize_for_inference (oneDNN fusion) at load time", TRUE,
          kRWReady));
  str(PROP_CROP, "crop", "Crop",
      "Region of interest \"x,y,width,height\" in frame pixels fed to the model (clipped to the "
      "frame; x/y "
      "rounded down to even for chroma-subsampled formats); unset = whole frame");
  str(PROP_MODEL_INSTANCE_ID, "model-instance-id", "Model instance id",
      "Identifier of the loaded model, copied into every result");
  g_object_class_install_property(
      k, PROP_FRAMES,
      g_param_spec_uint64("frames", "Frames", "Frames inferred since start", 0, G_MAXUINT64, 0,
                          kRO));
  g_object_class_install_property(
      k, PROP_LOAD_TIME,
      g_param_spec_double("load-time", "Load time",
                          "Milliseconds spent loading, optimising and warming up the model", 0,
                          G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_THREADS,
      g_param_spec_int("threads", "Threads",
                       "Intra-op (OpenMP) threads for inference; 0 = one per core in 'cores' if "
                       "set, else one per physical core this process may use. OMP_NUM_THREADS "
                       "does not change it",
                       0, 1024, 0, kRWReady));
  str(PROP_CORES, "cores", "Cores",
      "CPU list like \"2-5,8\": each inference thread is pinned to one of these cores "
      "(unset = not pinned). Must be within the process affinity (taskset, cgroups)");
  g_object_class_install_property(
      k, PROP_PRECISION,
      g_param_spec_enum("precision", "Precision", "Numeric precision of inference",
                        precision_type(), static_cast<int>(Precision::kAuto), kRWReady));
  g_object_class_install_property(
      k, PROP_INPUT_DTYPE,
      g_param_spec_enum(
          "input-dtype", "Input dtype",
          "What the model takes: normalised float32, or raw uint8 pixels (mean/std not applied)",
          input_dtype_type(), DTYPE_AUTO, kRWReady));
  g_object_class_install_property(
      k, PROP_INPUT_LAYOUT,
      g_param_spec_enum("input-layout", "Input layout",
                        "Layout of the tensor forward() takes: nchw, or nhwc for models converted "
                        "from TensorFlow/Keras (both zero-copy)",
                        input_layout_type(), LAYOUT_AUTO, kRWReady));
  g_object_class_install_property(
      k, PROP_READ_TIME,
      g_param_spec_double("read-time", "Read time",
                          "Milliseconds spent checking and loading the model file (part of "
                          "load-time)",
                          0, G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_OPTIMIZE_TIME,
      g_param_spec_double("optimize-time", "Optimise time",
                          "Milliseconds spent freezing and optimising the model (part of "
                          "load-time)",
                          0, G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_WARMUP_TIME,
      g_param_spec_double("warmup-time", "Warm-up time",
                          "Milliseconds spent in warm-up runs, including the fp32/bf16 timing "
                          "of precision=auto (part of load-time)",
                          0, G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_ACTIVE_PRECISION,
      g_param_spec_string("active-precision", "Active precision",
                          "Precision the model runs at after start (fp32, int8 or bf16)", nullptr,
                          kRO));
  g_object_class_install_property(
      k, PROP_BATCH_SIZE,
      g_param_spec_int("batch-size", "Batch size",
                       "Frames per forward() call; frames of every element sharing the "
                       "model-instance-id fill the same batch",
                       1, 64, 1, kRWReady));
  g_object_class_install_property(
      k, PROP_BATCH_TIMEOUT,
      g_param_spec_uint64("batch-timeout", "Batch timeout",
                          "Microseconds a partial batch waits for more frames after its first "
                          "one arrived (default: a bit more than one frame at 30 fps)",
                          0, G_GUINT64_CONSTANT(60000000), 40000, kRWReady));
  g_object_class_install_property(
      k, PROP_INFERENCE_INTERVAL,
      g_param_spec_int("inference-interval", "Inference interval",
                       "Infer every Nth frame; the frames in between carry the latest result, "
                       "marked not inferred",
                       1, 1000000, 1, kRWReady));
  g_object_class_install_property(
      k, PROP_DROP_POLICY,
      g_param_spec_enum("drop-policy", "Drop policy",
                        "What to do with a frame that arrives while the model is busy",
                        drop_policy_type(), DROP_AUTO, kRWReady));
  g_object_class_install_property(
      k, PROP_STATS_INTERVAL,
      g_param_spec_uint("stats-interval", "Stats interval",
                        "Milliseconds between \"torchinfer-stats\" element messages (0 = none)", 0,
                        G_MAXUINT, 0, kRWReady));
  g_object_class_install_property(
      k, PROP_DROPPED,
      g_param_spec_uint64("dropped", "Dropped",
                          "Frames not inferred because the model was busy (drop-policy)", 0,
                          G_MAXUINT64, 0, kRO));
  g_object_class_install_property(
      k, PROP_FPS,
      g_param_spec_double("fps", "Frames per second", "Output frame rate since start", 0,
                          G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_LATENCY_P50,
      g_param_spec_double("latency-p50", "Latency p50",
                          "Median milliseconds from a frame entering to it leaving, over the "
                          "last 1024 frames",
                          0, G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_LATENCY_P99,
      g_param_spec_double("latency-p99", "Latency p99", "99th percentile of the same latency", 0,
                          G_MAXDOUBLE, 0, kRO));
  g_object_class_install_property(
      k, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Counters and per-stage latency percentiles (same fields as the "
                         "torchinfer-stats message)",
                         GST_TYPE_STRUCTURE, kRO));
  g_object_class_install_property(
      k, PROP_LAST_INFERENCE_TIME,
      g_param_spec_double("last-inference-time", "Last inference time",
                          "Milliseconds taken by the most recent forward() call", 0, G_MAXDOUBLE, 0,
                          kRO));
}

bool set_property(Settings& s, guint prop_id, const GValue* value, GParamSpec* pspec,
                  bool running) {
  if (running) {
    g_warning("torchinfer: property '%s' can only be changed in the NULL or READY state",
              g_param_spec_get_name(pspec));
    return false;
  }
  auto dup = [&](std::string& field) {
    const char* v = g_value_get_string(value);
    field = v ? v : "";
    return true;
  };
  switch (prop_id) {
    case PROP_MODEL:
      return dup(s.model);
    case PROP_MODEL_CONFIG:
      return dup(s.model_config);
    case PROP_LABELS:
      return dup(s.labels);
    case PROP_MODEL_INSTANCE_ID:
      return dup(s.model_instance_id);
    case PROP_INPUT_WIDTH:
      s.input_width = g_value_get_int(value);
      return true;
    case PROP_INPUT_HEIGHT:
      s.input_height = g_value_get_int(value);
      return true;
    case PROP_CHANNEL_ORDER:
      s.channel_order = static_cast<ChannelOrderProp>(g_value_get_enum(value));
      return true;
    case PROP_MEAN:
      return set_float_list(s.mean, value, pspec, false);
    case PROP_STD:
      return set_float_list(s.std, value, pspec, true);
    case PROP_OFFSET:
      return set_float_list(s.offset, value, pspec, false);
    case PROP_SCALE:
      s.scale = g_value_get_double(value);
      return true;
    case PROP_TASK:
      s.task = static_cast<TaskProp>(g_value_get_enum(value));
      return true;
    case PROP_OUTPUT_ACTIVATION:
      s.activation = static_cast<ActivationProp>(g_value_get_enum(value));
      return true;
    case PROP_TOP_K:
      s.top_k = g_value_get_int(value);
      return true;
    case PROP_KEEP_ASPECT_RATIO:
      s.keep_aspect_ratio = g_value_get_boolean(value);
      return true;
    case PROP_PAD_VALUE:
      s.pad_value = g_value_get_int(value);
      return true;
    case PROP_RESIZE_METHOD:
      s.resize_method = static_cast<ResizeMethod>(g_value_get_enum(value));
      return true;
    case PROP_WARMUP:
      s.warmup = g_value_get_int(value);
      return true;
    case PROP_OPTIMIZE:
      s.optimize = g_value_get_boolean(value);
      return true;
    case PROP_CROP:
      return set_crop(s.crop, value, pspec);
    case PROP_THREADS:
      s.threads = g_value_get_int(value);
      return true;
    case PROP_CORES: {
      const char* v = g_value_get_string(value);
      if (v)
        s.cores = std::string(v);
      else
        s.cores.reset();
      return true;
    }
    case PROP_PRECISION:
      s.precision = static_cast<Precision>(g_value_get_enum(value));
      return true;
    case PROP_INPUT_DTYPE:
      s.input_dtype = static_cast<InputDtypeProp>(g_value_get_enum(value));
      return true;
    case PROP_INPUT_LAYOUT:
      s.input_layout = static_cast<InputLayoutProp>(g_value_get_enum(value));
      return true;
    case PROP_BATCH_SIZE:
      s.batch_size = g_value_get_int(value);
      return true;
    case PROP_BATCH_TIMEOUT:
      s.batch_timeout_us = g_value_get_uint64(value);
      return true;
    case PROP_INFERENCE_INTERVAL:
      s.inference_interval = g_value_get_int(value);
      return true;
    case PROP_DROP_POLICY:
      s.drop_policy = static_cast<DropPolicy>(g_value_get_enum(value));
      return true;
    case PROP_STATS_INTERVAL:
      s.stats_interval_ms = g_value_get_uint(value);
      return true;
    default:
      return false;
  }
}

void get_property(const Settings& s, const Stats& st, guint prop_id, GValue* value, GParamSpec*) {
  auto str = [&](const std::string& v) {
    g_value_set_string(value, v.empty() ? nullptr : v.c_str());
  };
  switch (prop_id) {
    case PROP_MODEL:
      str(s.model);
      break;
    case PROP_MODEL_CONFIG:
      str(s.model_config);
      break;
    case PROP_LABELS:
      str(s.labels);
      break;
    case PROP_MODEL_INSTANCE_ID:
      str(s.model_instance_id);
      break;
    case PROP_INPUT_WIDTH:
      g_value_set_int(value, s.input_width);
      break;
    case PROP_INPUT_HEIGHT:
      g_value_set_int(value, s.input_height);
      break;
    case PROP_CHANNEL_ORDER:
      g_value_set_enum(value, s.channel_order);
      break;
    case PROP_MEAN:
      str(s.mean);
      break;
    case PROP_STD:
      str(s.std);
      break;
    case PROP_OFFSET:
      str(s.offset);
      break;
    case PROP_SCALE:
      g_value_set_double(value, s.scale);
      break;
    case PROP_TASK:
      g_value_set_enum(value, s.task);
      break;
    case PROP_OUTPUT_ACTIVATION:
      g_value_set_enum(value, s.activation);
      break;
    case PROP_TOP_K:
      g_value_set_int(value, s.top_k);
      break;
    case PROP_KEEP_ASPECT_RATIO:
      g_value_set_boolean(value, s.keep_aspect_ratio);
      break;
    case PROP_PAD_VALUE:
      g_value_set_int(value, s.pad_value);
      break;
    case PROP_RESIZE_METHOD:
      g_value_set_enum(value, static_cast<int>(s.resize_method));
      break;
    case PROP_WARMUP:
      g_value_set_int(value, s.warmup);
      break;
    case PROP_OPTIMIZE:
      g_value_set_boolean(value, s.optimize);
      break;
    case PROP_CROP:
      if (s.crop.width > 0) {
        gchar* t = g_strdup_printf("%d,%d,%d,%d", s.crop.x, s.crop.y, s.crop.width, s.crop.height);
        g_value_take_string(value, t);
      } else {
        g_value_set_string(value, nullptr);
      }
      break;
    case PROP_FRAMES:
      g_value_set_uint64(value, st.frames);
      break;
    case PROP_LOAD_TIME:
      g_value_set_double(value, st.load_ms);
      break;
    case PROP_LAST_INFERENCE_TIME:
      g_value_set_double(value, st.last_inference_ms);
      break;
    case PROP_THREADS:
      g_value_set_int(value, s.threads);
      break;
    case PROP_CORES:
      g_value_set_string(value, s.cores ? s.cores->c_str() : nullptr);
      break;
    case PROP_PRECISION:
      g_value_set_enum(value, static_cast<int>(s.precision));
      break;
    case PROP_INPUT_DTYPE:
      g_value_set_enum(value, s.input_dtype);
      break;
    case PROP_INPUT_LAYOUT:
      g_value_set_enum(value, s.input_layout);
      break;
    case PROP_READ_TIME:
      g_value_set_double(value, st.read_ms);
      break;
    case PROP_OPTIMIZE_TIME:
      g_value_set_double(value, st.optimize_ms);
      break;
    case PROP_WARMUP_TIME:
      g_value_set_double(value, st.warmup_ms);
      break;
    case PROP_ACTIVE_PRECISION:
      str(st.active_precision);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_int(value, s.batch_size);
      break;
    case PROP_BATCH_TIMEOUT:
      g_value_set_uint64(value, s.batch_timeout_us);
      break;
    case PROP_INFERENCE_INTERVAL:
      g_value_set_int(value, s.inference_interval);
      break;
    case PROP_DROP_POLICY:
      g_value_set_enum(value, s.drop_policy);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint(value, s.stats_interval_ms);
      break;
    default:
      break;
  }
}

GstStructure* stats_structure(const char* name, const StatsSnapshot& s) {
  GstStructure* st = gst_structure_new(
      name, "frames-in", G_TYPE_UINT64, s.frames_in, "frames-out", G_TYPE_UINT64, s.frames_out,
      "frames-inferred", G_TYPE_UINT64, s.inferred, "frames-skipped", G_TYPE_UINT64, s.skipped,
      "frames-dropped", G_TYPE_UINT64, s.dropped, "frames-invalid", G_TYPE_UINT64, s.invalid,
      "mean-batch-fill", G_TYPE_DOUBLE, s.mean_batch_fill, "fps", G_TYPE_DOUBLE, s.fps, nullptr);
  const struct {
    const char* stage;
    const StagePercentiles& p;
  } stages[] = {{"queue", s.queue},
                {"preprocess", s.preprocess},
                {"inference", s.inference},
                {"total", s.total}};
  for (const auto& x : stages) {
    const std::string base = std::string(x.stage) + "-ms-";
    gst_structure_set(st, (base + "p50").c_str(), G_TYPE_DOUBLE, x.p.p50, (base + "p95").c_str(),
                      G_TYPE_DOUBLE, x.p.p95, (base + "p99").c_str(), G_TYPE_DOUBLE, x.p.p99,
                      nullptr);
  }
  return st;
}

}  // namespace torchinfer::gst
