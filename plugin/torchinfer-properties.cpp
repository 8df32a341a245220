// The torchinfer element's properties, each described once: its GParamSpec,
// where its value lives and whether it may change while PLAYING (rules in
// property-table.h). A new property needs an id in Prop, a member in
// Settings (or a figure in Status) and one entry here.
#include "model/model_loader.h"
#include "stream/regions.h"
#include "torchinfer-property-access.h"
#include "torchinfer-property-types.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {
namespace {

// Writable before start (NULL or READY), stored in Settings member M; `set`
// replaces the plain store where the value needs checking.
template <auto M>
constexpr Entry ready(Prop id, MakeSpec spec, Setter set = set_field<M>) {
  return {id, Access::kReady, spec, set, get_field<M>};
}

// Read-only, Stats member M of the latest load.
template <auto M>
constexpr Entry stat(Prop id, MakeSpec spec) {
  return {id, Access::kReadOnly, spec, nullptr, get_field<M>};
}

// Read-only, the answer of Status member function F.
template <auto F>
void get_live(const Settings&, const Status& now, GValue* v) {
  to_value(v, (now.*F)());
}

template <auto F>
constexpr Entry live(Prop id, MakeSpec spec) {
  return {id, Access::kReadOnly, spec, nullptr, get_live<F>};
}

// Read-only, from the element's stream statistics (Status::stream()).
constexpr Entry stream(Prop id, MakeSpec spec, Getter get) {
  return {id, Access::kReadOnly, spec, nullptr, get};
}

// A list that names no class ("," or " , ") would infer every region, the
// opposite of what was asked: refused like any other bad value.
bool set_object_class(Settings& s, const GValue* v, GParamSpec* pspec) {
  const char* text = g_value_get_string(v);
  if (text && *text && parse_class_list(text).empty()) {
    g_warning(
        "torchinfer: rejected value '%s' for property '%s': it names no class; give "
        "comma-separated ROI labels (e.g. \"car,truck\"), or unset it to infer every ROI",
        text, g_param_spec_get_name(pspec));
    return false;
  }
  // NULL unsets it (the sidecar's object_classes apply); "" is set: every
  // region, whatever the sidecar says.
  s.object_class = text ? std::optional<std::string>(text) : std::nullopt;
  return true;
}

// The properties that override the model's sidecar (std::optional
// members): each reads back its GParamSpec default until set.
void get_keep_aspect_ratio(const Settings& s, const Status&, GValue* v) {
  g_value_set_boolean(v, s.keep_aspect_ratio.value_or(false));
}
void get_pad_value(const Settings& s, const Status&, GValue* v) {
  g_value_set_int(v, s.pad_value.value_or(114));
}
void get_object_class(const Settings& s, const Status&, GValue* v) {
  g_value_set_string(v, s.object_class ? s.object_class->c_str() : nullptr);
}
void get_object_padding(const Settings& s, const Status&, GValue* v) {
  g_value_set_double(v, s.object_padding.value_or(0.0));
}
// Unset tile settings read as their defaults (the sidecar's apply at start).
void get_tile_width(const Settings& s, const Status&, GValue* v) {
  g_value_set_int(v, s.tile_width.value_or(0));
}
void get_tile_height(const Settings& s, const Status&, GValue* v) {
  g_value_set_int(v, s.tile_height.value_or(0));
}
void get_tile_overlap(const Settings& s, const Status&, GValue* v) {
  g_value_set_double(v, s.tile_overlap.value_or(0.2));
}

// The read-only figures: milliseconds, rates.
GParamSpec* nonnegative_double(const char* name, const char* nick, const char* blurb,
                               GParamFlags f) {
  return g_param_spec_double(name, nick, blurb, 0, G_MAXDOUBLE, 0, f);
}

// clang-format off
constexpr Entry kProperties[] = {
  {PROP_MODEL, Access::kPlaying, [](GParamFlags f) {
     return g_param_spec_string("model", "Model",
       "TorchScript model file (.pt) saved with torch.jit.trace/script. Setting it while "
       "PAUSED or PLAYING loads the new model in the background and switches to it between "
       "batches (posts \"torchinfer-model-reloaded\"; a model that fails to load leaves the "
       "old one running and posts a warning). With a model-instance-id every element sharing "
       "it switches, reads the new file here and posts the message with its first new result", nullptr, f); },
   set_field<&Settings::model>, get_field<&Settings::model>},
  ready<&Settings::model_config>(PROP_MODEL_CONFIG, [](GParamFlags f) {
    return g_param_spec_string("model-config", "Model config",
      "JSON sidecar describing the model input and output (default: <model>.json beside the "
      "model; without one, torchvision conventions: 224x224 RGB, ImageNet mean/std, "
      "classification)", nullptr, f); }),
  ready<&Settings::labels>(PROP_LABELS, [](GParamFlags f) {
    return g_param_spec_string("labels", "Labels file",
      "Text file with one class label per line (overrides the sidecar)", nullptr, f); }),
  ready<&Settings::input_width>(PROP_INPUT_WIDTH, [](GParamFlags f) {
    return g_param_spec_int("input-width", "Input width",
      "Model input width in pixels (0 = from the model config)", 0, 8192, 0, f); }),
  ready<&Settings::input_height>(PROP_INPUT_HEIGHT, [](GParamFlags f) {
    return g_param_spec_int("input-height", "Input height",
      "Model input height in pixels (0 = from the model config)", 0, 8192, 0, f); }),
  ready<&Settings::channel_order>(PROP_CHANNEL_ORDER, [](GParamFlags f) {
    return g_param_spec_enum("channel-order", "Channel order", "Channel order the model expects",
      channel_order_type(), ORDER_AUTO, f); }),
  ready<&Settings::mean>(PROP_MEAN, [](GParamFlags f) {
    return g_param_spec_string("mean", "Mean",
      "Per-channel mean in 0..1 units, e.g. \"0.485,0.456,0.406\": value = (pixel/255 - mean) / "
      "std", nullptr, f); },
    set_floats<&Settings::mean>),
  ready<&Settings::std>(PROP_STD, [](GParamFlags f) {
    return g_param_spec_string("std", "Std",
      "Per-channel standard deviation in 0..1 units, e.g. \"0.229,0.224,0.225\"", nullptr, f); },
    set_floats<&Settings::std, true>),
  ready<&Settings::scale>(PROP_SCALE, [](GParamFlags f) {
    return g_param_spec_double("scale", "Scale",
      "Alternative to mean/std: value = pixel(0..255) * scale + offset (0 = unset)", -1e6, 1e6,
      0.0, f); }),
  ready<&Settings::offset>(PROP_OFFSET, [](GParamFlags f) {
    return g_param_spec_string("offset", "Offset",
      "Per-channel offset used with scale, e.g. \"-1,-1,-1\"", nullptr, f); },
    set_floats<&Settings::offset>),
  ready<&Settings::task>(PROP_TASK, [](GParamFlags f) {
    return g_param_spec_enum("task", "Task", "What the model output means", task_type(),
      TASK_AUTO, f); }),
  ready<&Settings::activation>(PROP_OUTPUT_ACTIVATION, [](GParamFlags f) {
    return g_param_spec_enum("output-activation", "Output activation",
      "How class scores become confidences", activation_type(), ACT_AUTO, f); }),
  ready<&Settings::top_k>(PROP_TOP_K, [](GParamFlags f) {
    return g_param_spec_int("top-k", "Top k",
      "Number of classification results per frame (0 = from the model config, default 5)",
      0, 1000, 0, f); }),
  {PROP_KEEP_ASPECT_RATIO, Access::kReady, [](GParamFlags f) {
     return g_param_spec_boolean("keep-aspect-ratio", "Keep aspect ratio",
       "Letterbox: scale the frame to fit the model input and pad the rest with pad-value. "
       "Unset: the sidecar's \"resize\" (stretch, letterbox, center_crop), else stretch; set "
       "(TRUE or FALSE) it wins over the sidecar",
       FALSE, f); },
   set_field<&Settings::keep_aspect_ratio>, get_keep_aspect_ratio},
  {PROP_PAD_VALUE, Access::kReady, [](GParamFlags f) {
     return g_param_spec_int("pad-value", "Pad value",
       "Letterbox padding, in pixel units 0..255 before normalising (unset: the sidecar's "
       "\"pad_value\", else 114)", 0, 255, 114, f); },
   set_field<&Settings::pad_value>, get_pad_value},
  ready<&Settings::resize_method>(PROP_RESIZE_METHOD, [](GParamFlags f) {
    return g_param_spec_enum("resize-method", "Resize method",
      "Interpolation used to resize frames to the model input", resize_method_type(),
      static_cast<int>(ResizeMethod::kArea), f); }),
  ready<&Settings::warmup>(PROP_WARMUP, [](GParamFlags f) {
    return g_param_spec_int("warmup", "Warm-up runs",
      "Inference runs on a blank input before the first frame (the JIT specialises on the "
      "second)", 1, 100, 3, f); }),
  ready<&Settings::optimize>(PROP_OPTIMIZE, [](GParamFlags f) {
    return g_param_spec_boolean("optimize", "Optimize",
      "Freeze the model and run optimize_for_inference (oneDNN fusion) at load time", TRUE,
      f); }),
  {PROP_CROP, Access::kReady, [](GParamFlags f) {
     return g_param_spec_string("crop", "Crop",
       "Region of interest \"x,y,width,height\" in frame pixels fed to the model (clipped to "
       "the frame; x/y rounded down to even for chroma-subsampled formats; Bayer: whole 2x2 "
       "cells); unset = whole frame",
       nullptr, f); },
   set_crop, get_crop},
  ready<&Settings::model_instance_id>(PROP_MODEL_INSTANCE_ID, [](GParamFlags f) {
    return g_param_spec_string("model-instance-id", "Model instance id",
      "Identifier of the loaded model, copied into every result", nullptr, f); }),
  live<&Status::frames_inferred>(PROP_FRAMES, [](GParamFlags f) {
    return g_param_spec_uint64("frames", "Frames", "Frames inferred since start", 0,
      G_MAXUINT64, 0, f); }),
  stat<&Stats::load_ms>(PROP_LOAD_TIME, [](GParamFlags f) {
    return nonnegative_double("load-time", "Load time",
      "Milliseconds spent loading, optimising and warming up the model", f); }),
  live<&Status::last_inference_ms>(PROP_LAST_INFERENCE_TIME, [](GParamFlags f) {
    return nonnegative_double("last-inference-time", "Last inference time",
      "Milliseconds taken by the most recent forward() call", f); }),
  ready<&Settings::threads>(PROP_THREADS, [](GParamFlags f) {
    return g_param_spec_int("threads", "Threads",
      "Intra-op (OpenMP) threads for inference; 0 = one per core in 'cores' if set, else one "
      "per physical core this process may use. OMP_NUM_THREADS does not change it",
      0, 1024, 0, f); }),
  ready<&Settings::cores>(PROP_CORES, [](GParamFlags f) {
    return g_param_spec_string("cores", "Cores",
      "CPU list like \"2-5,8\": each inference thread is pinned to one of these cores "
      "(unset = not pinned). Must be within the process affinity (taskset, cgroups)",
      nullptr, f); }),
  ready<&Settings::precision>(PROP_PRECISION, [](GParamFlags f) {
    return g_param_spec_enum("precision", "Precision",
      "Numeric precision of inference. auto: int8 for a quantized model, else fp32 unless bf16 is "
      "15 % faster in every timed round and within 2 % of fp32 (AVX512-BF16 CPUs only; decided once "
      "per model, CPU, threads and batch, then cached, see docs/tuning.md)",
      precision_type(), static_cast<int>(Precision::kAuto), f); }),
  ready<&Settings::input_dtype>(PROP_INPUT_DTYPE, [](GParamFlags f) {
    return g_param_spec_enum("input-dtype", "Input dtype",
      "What the model takes: normalised float32, or raw uint8 pixels (mean/std not applied)",
      input_dtype_type(), DTYPE_AUTO, f); }),
  stat<&Stats::read_ms>(PROP_READ_TIME, [](GParamFlags f) {
    return nonnegative_double("read-time", "Read time",
      "Milliseconds spent checking and loading the model file (part of load-time)", f); }),
  stat<&Stats::optimize_ms>(PROP_OPTIMIZE_TIME, [](GParamFlags f) {
    return nonnegative_double("optimize-time", "Optimise time",
      "Milliseconds spent freezing and optimising the model (part of load-time)", f); }),
  stat<&Stats::warmup_ms>(PROP_WARMUP_TIME, [](GParamFlags f) {
    return nonnegative_double("warmup-time", "Warm-up time",
      "Milliseconds spent in warm-up runs, including the fp32/bf16 timing of precision=auto "
      "(part of load-time)", f); }),
  stat<&Stats::active_precision>(PROP_ACTIVE_PRECISION, [](GParamFlags f) {
    return g_param_spec_string("active-precision", "Active precision",
      "Precision the model runs at after start (fp32, int8 or bf16)", nullptr, f); }),
  ready<&Settings::batch_size>(PROP_BATCH_SIZE, [](GParamFlags f) {
    return g_param_spec_int("batch-size", "Batch size",
      "Frames per forward() call; frames of every element sharing the model-instance-id fill "
      "the same batch", 1, 64, 1, f); }),
  ready<&Settings::batch_timeout_us>(PROP_BATCH_TIMEOUT, [](GParamFlags f) {
    return g_param_spec_uint64("batch-timeout", "Batch timeout",
      "Microseconds a partial batch waits for more frames after its first one arrived "
      "(default: a bit more than one frame at 30 fps)", 0, G_GUINT64_CONSTANT(60000000), 40000,
      f); }),
  ready<&Settings::inference_interval>(PROP_INFERENCE_INTERVAL, [](GParamFlags f) {
    return g_param_spec_int("inference-interval", "Inference interval",
      "Infer every Nth frame; the frames in between carry the latest result, marked not "
      "inferred", 1, 1000000, 1, f); }),
  ready<&Settings::drop_policy>(PROP_DROP_POLICY, [](GParamFlags f) {
    return g_param_spec_enum("drop-policy", "Drop policy",
      "What to do with a frame that arrives while the model is busy", drop_policy_type(),
      DROP_AUTO, f); }),
  ready<&Settings::stats_interval_ms>(PROP_STATS_INTERVAL, [](GParamFlags f) {
    return g_param_spec_uint("stats-interval", "Stats interval",
      "Milliseconds between \"torchinfer-stats\" element messages (0 = none)", 0, G_MAXUINT, 0,
      f); }),
  stream(PROP_DROPPED, [](GParamFlags f) {
      return g_param_spec_uint64("dropped", "Dropped",
        "Frames that entered and never left (flushed by a seek or stop, discarded after "
        "downstream stopped, refused by a full queue when live); \"stats\" has every counter",
        0, G_MAXUINT64, 0, f); },
    [](const Settings&, const Status& s, GValue* v) {
      g_value_set_uint64(v, s.stream().dropped); }),
  stream(PROP_FPS, [](GParamFlags f) {
      return nonnegative_double("fps", "Frames per second", "Output frame rate since start", f); },
    [](const Settings&, const Status& s, GValue* v) {
      g_value_set_double(v, s.stream().fps); }),
  stream(PROP_LATENCY_P50, [](GParamFlags f) {
      return nonnegative_double("latency-p50", "Latency p50",
        "Median milliseconds from a frame entering to it leaving, over the last 1024 frames",
        f); },
    [](const Settings&, const Status& s, GValue* v) {
      g_value_set_double(v, s.stream().total.p50); }),
  stream(PROP_LATENCY_P99, [](GParamFlags f) {
      return nonnegative_double("latency-p99", "Latency p99", "99th percentile of the same latency", f); },
    [](const Settings&, const Status& s, GValue* v) {
      g_value_set_double(v, s.stream().total.p99); }),
  stream(PROP_STATS, [](GParamFlags f) {
      return g_param_spec_boxed("stats", "Statistics",
        "Counters and per-stage latency percentiles (same fields as the torchinfer-stats "
        "message)", GST_TYPE_STRUCTURE, f); },
    [](const Settings&, const Status& s, GValue* v) {
      g_value_take_boxed(v, stats_structure("torchinfer-stats", s.stream())); }),
  ready<&Settings::input_layout>(PROP_INPUT_LAYOUT, [](GParamFlags f) {
    return g_param_spec_enum("input-layout", "Input layout",
      "Layout of the tensor forward() takes: nchw, or nhwc for models converted from "
      "TensorFlow/Keras (both zero-copy)",
      input_layout_type(), LAYOUT_AUTO, f); }),
  ready<&Settings::inference_region>(PROP_INFERENCE_REGION, [](GParamFlags f) {
    return g_param_spec_enum("inference-region", "Inference region",
      "full-frame: one inference per frame. roi-list: one inference per region-of-interest meta "
      "on the frame (torchnms, torchtrack or any element attaching GstVideoRegionOfInterestMeta), "
      "cropped straight from the camera format; each result goes on its ROI as a "
      "\"classification\" param", inference_region_type(), REGION_FULL_FRAME, f); }),
  {PROP_OBJECT_CLASS, Access::kReady, [](GParamFlags f) {
     return g_param_spec_string("object-class", "Object class",
       "roi-list: comma-separated labels of the ROIs to infer (the ROI's detection label, else "
       "its roi-type); others pass untouched. Unset = the sidecar's \"object_classes\", else "
       "every ROI; \"\" = every ROI whatever the sidecar says", nullptr, f); },
   set_object_class, get_object_class},
  ready<&Settings::min_object_size>(PROP_MIN_OBJECT_SIZE, [](GParamFlags f) {
    return g_param_spec_int("min-object-size", "Min object size",
      "roi-list: ROIs narrower or lower than this many pixels (after clipping to the frame) are "
      "not inferred", 0, 65535, 0, f); }),
  {PROP_OBJECT_PADDING, Access::kReady, [](GParamFlags f) {
     return g_param_spec_double("object-padding", "Object padding",
       "roi-list: each side of a ROI grows by this fraction of its width (left, right) or "
       "height (top, bottom) before cropping; clipped to the frame. Unset: the sidecar's "
       "\"object_padding\", else 0", 0.0, 10.0, 0.0, f); },
   set_field<&Settings::object_padding>, get_object_padding},
  ready<&Settings::reclassify_interval>(PROP_RECLASSIFY_INTERVAL, [](GParamFlags f) {
    return g_param_spec_int("reclassify-interval", "Reclassify interval",
      "roi-list: a tracked ROI (object_id param, torchtrack) is inferred again only every Nth "
      "frame; in between it carries its latest result, marked inferred=false. ROIs without an "
      "id are inferred on every inferred frame", 1, 1000000, 1, f); }),
  ready<&Settings::preprocess_on>(PROP_PREPROCESS_ON, [](GParamFlags f) {
    return g_param_spec_enum("preprocess-on", "Preprocess on",
      "Threads that resize and normalise frames: the streaming thread (overlaps forward() when "
      "a core is spare) or the inference threads right before each batch (no stream competes "
      "with them for the cores); auto picks by the cores left over",
      preprocess_on_type(), PREPROCESS_AUTO, f); }),
  ready<&Settings::lanes>(PROP_LANES, [](GParamFlags f) {
    return g_param_spec_int("lanes", "Lanes",
      "Batches inferred at once: the model is loaded this many times, each copy on its own "
      "share of 'cores' (else of the cores this process may use) with its share of 'threads'. "
      "0 = automatic: lanes of about sqrt(cores) threads each (2 cores: 2 lanes of 1 thread; "
      "docs/tuning.md)", 0, kMaxLanes, 0, f); }),
  ready<&Settings::input_bits>(PROP_INPUT_BITS, [](GParamFlags f) {
    return g_param_spec_int("input-bits", "Input bits",
      "GRAY16_LE (10..16-bit mono cameras): significant low bits per sample; 2^bits - 1 is "
      "white (255 before normalising), larger values clamp. 12 for a Mono12 camera", 8, 16, 16,
      f); }),
  ready<&Settings::sensitivity>(PROP_SENSITIVITY, [](GParamFlags f) {
    return g_param_spec_double("sensitivity", "Sensitivity",
      "task=anomaly with thresholds: a result is anomalous when its normalised score >= "
      "1 - sensitivity (anomalib's image_sensitivity; 0.5 = the model's own threshold, higher "
      "flags more). -1 = the sidecar's \"sensitivity\", else 0.5", -1.0, 1.0, -1.0, f); }),
  {PROP_ANOMALY_THRESHOLD, Access::kReady, [](GParamFlags f) {
     return g_param_spec_double("anomaly-threshold", "Anomaly threshold",
       "task=anomaly without thresholds in the sidecar: a result is anomalous when its raw "
       "score >= this (unset: the sidecar's \"anomaly_threshold\", else 0.5)",
       -G_MAXDOUBLE, G_MAXDOUBLE, 0.5, f); },
   [](Settings& s, const GValue* v, GParamSpec*) {
     s.anomaly_threshold = g_value_get_double(v);
     return true; },
   [](const Settings& s, const Status&, GValue* v) {
     g_value_set_double(v, s.anomaly_threshold.value_or(0.5)); }},
  stat<&Stats::active_lanes>(PROP_ACTIVE_LANES, [](GParamFlags f) {
    return g_param_spec_int("active-lanes", "Active lanes",
      "Lanes the loaded model runs: 'lanes' as resolved (lanes=0: the count chosen from the "
      "cores); 0 before the first load", 0, kMaxLanes, 0, f); }),
  ready<&Settings::inference_gate>(PROP_INFERENCE_GATE, [](GParamFlags f) {
    return g_param_spec_enum("inference-gate", "Inference gate",
      "none: every frame due is inferred. motion: a frame is inferred only if its luma (every "
      "8th pixel of every 8th row) changed since the last inferred frame; still frames pass "
      "through with the latest result, its tensor meta marked not inferred (skip_reason still), "
      "counted as frames-skipped-still. With inference-region=tiles each tile is judged on its "
      "own and only the tiles that moved are inferred; the others carry their latest result "
      "(docs/elements.md)", inference_gate_type(), GATE_NONE, f); }),
  ready<&Settings::motion_threshold>(PROP_MOTION_THRESHOLD, [](GParamFlags f) {
    return g_param_spec_double("motion-threshold", "Motion threshold",
      "inference-gate=motion: a cell (64x64 frame pixels) has changed when the mean absolute "
      "difference of its luma samples to the last inferred frame reaches this many 8-bit "
      "levels (0..255)", 0.0, 255.0, 8.0, f); }),
  ready<&Settings::motion_min_area>(PROP_MOTION_MIN_AREA, [](GParamFlags f) {
    return g_param_spec_double("motion-min-area", "Motion min area",
      "inference-gate=motion: fraction of the frame's cells (0..1) that must have changed for "
      "motion; at least one cell", 0.0, 1.0, 0.0, f); }),
  ready<&Settings::motion_hold>(PROP_MOTION_HOLD, [](GParamFlags f) {
    return g_param_spec_int("motion-hold", "Motion hold",
      "inference-gate=motion: frames after one with motion that are inferred whatever their "
      "difference, so a part entering or coming to rest is seen on several frames", 0, 1000000,
      3, f); }),
  ready<&Settings::motion_keyframe_interval>(PROP_MOTION_KEYFRAME_INTERVAL, [](GParamFlags f) {
    return g_param_spec_int("motion-keyframe-interval", "Motion keyframe interval",
      "inference-gate=motion: the most frames (counted among those due by inference-interval) "
      "in a row without inference: a still scene is inferred once every this many frames",
      1, 1000000, 30, f); }),
  {PROP_TILE_WIDTH, Access::kReady, [](GParamFlags f) {
     return g_param_spec_int("tile-width", "Tile width",
       "inference-region=tiles: width of a tile in frame pixels (cut to the frame's); 0 = the "
       "model's input width. Unset: the sidecar's \"tile_width\", else 0", 0, 65535, 0, f); },
   set_field<&Settings::tile_width>, get_tile_width},
  {PROP_TILE_HEIGHT, Access::kReady, [](GParamFlags f) {
     return g_param_spec_int("tile-height", "Tile height",
       "inference-region=tiles: height of a tile in frame pixels (cut to the frame's); 0 = the "
       "model's input height. Unset: the sidecar's \"tile_height\", else 0", 0, 65535, 0, f); },
   set_field<&Settings::tile_height>, get_tile_height},
  {PROP_TILE_OVERLAP, Access::kReady, [](GParamFlags f) {
     return g_param_spec_double("tile-overlap", "Tile overlap",
       "inference-region=tiles: fraction of a tile shared with its neighbour (rounded to whole "
       "pixels); an object cut by one tile's border lies whole in the next when it is smaller "
       "than the overlap. Unset: the sidecar's \"tile_overlap\", else 0.2", 0.0, 0.9, 0.2, f); },
   set_field<&Settings::tile_overlap>, get_tile_overlap},
  ready<&Settings::deskew>(PROP_DESKEW, [](GParamFlags f) {
    return g_param_spec_boolean("deskew", "Deskew",
      "roi-list: a ROI with a rotated box (torchnms decoder=yolov8-obb) is cut along the box and "
      "turned upright (its width axis left to right), straight from the frame; false = the "
      "axis-aligned box around it", TRUE, f); }),
};
// clang-format on

constexpr PropertyTable<Settings, Status> kTable{"torchinfer", kProperties};
static_assert(kTable.in_id_order(), "kProperties lists every Prop once, in enum order");
static_assert(kTable.size() == PROP_DESKEW, "every Prop has an entry");

}  // namespace

const PropertyTable<Settings, Status>& properties() {
  return kTable;
}

}  // namespace torchinfer::gst
