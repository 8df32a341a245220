/**
 * SECTION:element-torchinfer
 *
 * Runs a TorchScript model on every video frame and attaches the outputs as
 * GstTorchTensorMeta (plus a classification custom meta for classifiers).
 * Video passes through untouched; frames are preprocessed straight from the
 * camera format, so no videoconvert/videoscale is needed in front.
 *
 *   gst-launch-1.0 v4l2src ! video/x-raw,format=YUY2 ! torchinfer model=net.pt ! fakesink
 */
#include "gsttorchinfer.h"

#include <gst/video/video.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "common/error.h"
#include "decode/classification.h"
#include "engine/engine.h"
#include "engine/selfcheck.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "preprocess/preprocess.h"
#include "torchinfer-settings.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchinfer_debug);
#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;

#define TORCHINFER_FORMATS                                                                     \
  "{ YUY2, UYVY, NV12, NV21, I420, YV12, RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, " \
  "ABGR, GRAY8 }"

namespace {

// Everything that exists only between start() and stop().
struct Runtime {
  ModelConfig config;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Preprocessor> pre;
  AlignedBuffer batch;
  GstVideoInfo info;
  bool have_info = false;
  bool warned_not_classifier = false;
};

struct State {
  std::mutex settings_lock;  // guards settings
  Settings settings;
  std::mutex stats_lock;  // guards stats
  Stats stats;
  std::unique_ptr<Runtime> rt;  // streaming thread only, set up in start()
};

bool to_pixel_format(GstVideoFormat f, PixelFormat* out) {
  switch (f) {
    case GST_VIDEO_FORMAT_YUY2:
      *out = PixelFormat::kYUY2;
      return true;
    case GST_VIDEO_FORMAT_UYVY:
      *out = PixelFormat::kUYVY;
      return true;
    case GST_VIDEO_FORMAT_NV12:
      *out = PixelFormat::kNV12;
      return true;
    case GST_VIDEO_FORMAT_NV21:
      *out = PixelFormat::kNV21;
      return true;
    case GST_VIDEO_FORMAT_I420:
      *out = PixelFormat::kI420;
      return true;
    case GST_VIDEO_FORMAT_YV12:
      *out = PixelFormat::kYV12;
      return true;
    case GST_VIDEO_FORMAT_RGB:
      *out = PixelFormat::kRGB;
      return true;
    case GST_VIDEO_FORMAT_BGR:
      *out = PixelFormat::kBGR;
      return true;
    case GST_VIDEO_FORMAT_RGBx:
      *out = PixelFormat::kRGBx;
      return true;
    case GST_VIDEO_FORMAT_BGRx:
      *out = PixelFormat::kBGRx;
      return true;
    case GST_VIDEO_FORMAT_xRGB:
      *out = PixelFormat::kxRGB;
      return true;
    case GST_VIDEO_FORMAT_xBGR:
      *out = PixelFormat::kxBGR;
      return true;
    case GST_VIDEO_FORMAT_RGBA:
      *out = PixelFormat::kRGBA;
      return true;
    case GST_VIDEO_FORMAT_BGRA:
      *out = PixelFormat::kBGRA;
      return true;
    case GST_VIDEO_FORMAT_ARGB:
      *out = PixelFormat::kARGB;
      return true;
    case GST_VIDEO_FORMAT_ABGR:
      *out = PixelFormat::kABGR;
      return true;
    case GST_VIDEO_FORMAT_GRAY8:
      *out = PixelFormat::kGRAY8;
      return true;
    default:
      return false;
  }
}

GstTorchDType to_gst_dtype(DType d) {
  switch (d) {
    case DType::kFloat32:
      return GST_TORCH_DTYPE_FLOAT32;
    case DType::kFloat64:
      return GST_TORCH_DTYPE_FLOAT64;
    case DType::kInt32:
      return GST_TORCH_DTYPE_INT32;
    case DType::kInt64:
      return GST_TORCH_DTYPE_INT64;
    case DType::kUInt8:
      return GST_TORCH_DTYPE_UINT8;
    case DType::kInt8:
      return GST_TORCH_DTYPE_INT8;
    case DType::kBool:
      return GST_TORCH_DTYPE_BOOL;
  }
  return GST_TORCH_DTYPE_FLOAT32;
}

void attach_classification(GstBuffer* buf, const std::vector<ClassResult>& top) {
  GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm || top.empty()) return;
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set_name(s, "classification");
  gst_structure_set(s, "label", G_TYPE_STRING, top[0].label.c_str(), "label_id", G_TYPE_INT,
                    top[0].label_id, "confidence", G_TYPE_DOUBLE, top[0].confidence, nullptr);
  GValue labels = G_VALUE_INIT, ids = G_VALUE_INIT, confs = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&labels, top.size());
  gst_value_array_init(&ids, top.size());
  gst_value_array_init(&confs, top.size());
  for (const auto& r : top) {
    g_value_init(&v, G_TYPE_STRING);
    g_value_set_string(&v, r.label.c_str());
    gst_value_array_append_and_take_value(&labels, &v);
    g_value_init(&v, G_TYPE_INT);
    g_value_set_int(&v, r.label_id);
    gst_value_array_append_and_take_value(&ids, &v);
    g_value_init(&v, G_TYPE_DOUBLE);
    g_value_set_double(&v, r.confidence);
    gst_value_array_append_and_take_value(&confs, &v);
  }
  gst_structure_take_value(s, "labels", &labels);
  gst_structure_take_value(s, "label_ids", &ids);
  gst_structure_take_value(s, "confidences", &confs);
}

}  // namespace

struct _GstTorchInfer {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchInfer, gst_torchinfer, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchinfer, "torchinfer", GST_RANK_NONE, GST_TYPE_TORCHINFER);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(TORCHINFER_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(TORCHINFER_FORMATS)));

static void gst_torchinfer_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHINFER(object);
  GST_OBJECT_LOCK(self);
  const bool running = GST_STATE(self) >= GST_STATE_PAUSED;
  GST_OBJECT_UNLOCK(self);
  std::lock_guard<std::mutex> lock(self->state->settings_lock);
  set_property(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchinfer_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHINFER(object);
  std::scoped_lock lock(self->state->settings_lock, self->state->stats_lock);
  get_property(self->state->settings, self->state->stats, prop_id, value, pspec);
}

static gboolean report_start_error(GstTorchInfer* self, const Error& e, const std::string& model) {
  switch (e.kind()) {
    case ErrorKind::kNotFound:
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("%s", e.what()), ("model '%s'", model.c_str()));
      break;
    case ErrorKind::kConfigInvalid:
    case ErrorKind::kInvalidArgument:
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Invalid model configuration: %s", e.what()),
                        ("model '%s'", model.c_str()));
      break;
    default:
      GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("%s", e.what()), ("model '%s'", model.c_str()));
      break;
  }
  return FALSE;
}

static gboolean gst_torchinfer_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHINFER(trans);
  Settings s;
  {
    std::lock_guard<std::mutex> lock(self->state->settings_lock);
    s = self->state->settings;
  }
  if (s.model.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
                      ("No model file set: give torchinfer a model=<file.pt>."), (nullptr));
    return FALSE;
  }
  try {
    auto rt = std::make_unique<Runtime>();
    rt->config = resolve_model_config(s.model, s.model_config, s.overrides());
    PreprocessOptions po = PreprocessOptions::from_config(rt->config);
    po.keep_aspect_ratio = s.keep_aspect_ratio;
    po.pad_value = s.pad_value;
    po.method = s.resize_method;
    po.crop = s.crop;
    po.output = rt->config.input_uint8 ? OutputType::kUInt8 : OutputType::kFloat32;
    rt->pre = std::make_unique<Preprocessor>(po);

    EngineOptions eo;
    eo.model_path = s.model;
    eo.input_width = rt->config.input_width;
    eo.input_height = rt->config.input_height;
    eo.channels = rt->config.channels();
    eo.warmup_runs = s.warmup;
    eo.optimize = s.optimize;
    eo.threads = s.threads;
    eo.cores = s.cores;
    eo.precision = s.precision;
    eo.declared_int8 = rt->config.precision == ModelPrecision::kInt8;
    eo.input_uint8 = rt->config.input_uint8;
    rt->engine = std::make_unique<Engine>(eo);
    const EngineInfo& info = rt->engine->info();
    // Allocated untouched and zeroed by the pinned threads, so its pages
    // land on the NUMA node of the engine's cores.
    rt->batch = AlignedBuffer(po.slot_floats(), AlignedBuffer::Init::kNone);
    rt->engine->first_touch(rt->batch.data(), rt->batch.size());
    if (rt->config.accuracy_guard_forced)
      GST_ELEMENT_WARNING(
          self, LIBRARY, SETTINGS,
          ("Model '%s' is an int8 model that FAILED its accuracy check and was written with "
           "--force: results may be wrong.",
           s.model.c_str()),
          ("re-run models/quantize.py with more calibration frames or a looser tolerance, or "
           "use the fp32 model (sidecar %s)",
           rt->config.source.c_str()));
    for (const Finding& f :
         self_check(rt->engine.get(), rt->batch.data(), info.threads, info.cores)) {
      if (f.level == Finding::Level::kWarning)
        GST_WARNING_OBJECT(self, "self-check %s: %s (fix: %s)", f.key.c_str(), f.value.c_str(),
                           f.fix.c_str());
      else
        GST_INFO_OBJECT(self, "self-check %s: %s", f.key.c_str(), f.value.c_str());
    }
    if (info.threads >
        static_cast<int>(info.cores.empty() ? allowed_cpus().size() : info.cores.size()))
      GST_ELEMENT_WARNING(
          self, RESOURCE, SETTINGS,
          ("threads=%d is more than the %zu cores available: inference slows down.", info.threads,
           info.cores.empty() ? allowed_cpus().size() : info.cores.size()),
          ("set threads=0 (automatic) or list more cores"));
    if (s.precision == Precision::kBf16 && info.precision != Precision::kBf16)
      GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                          ("precision=bf16 is not faster for this model here; running fp32."),
                          ("%s", info.precision_note.c_str()));
    if (s.optimize && !info.optimized && !info.model_quantized)
      GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                          ("Model '%s' runs unoptimised (slower).", s.model.c_str()),
                          ("optimize_for_inference failed: %s", info.optimize_note.c_str()));
    GST_INFO_OBJECT(
        self,
        "model %s: %dx%d %s, task %s, %zu labels (config: %s); load %.1f ms, optimise %.1f ms "
        "(frozen %d, optimised %d), warm-up %.1f ms; precision %s (%s), %d threads, cores %s",
        s.model.c_str(), rt->config.input_width, rt->config.input_height,
        to_string(rt->config.channel_order), to_string(rt->config.task), rt->config.labels.size(),
        rt->config.source.empty() ? "defaults" : rt->config.source.c_str(), info.load_ms,
        info.optimize_ms, info.frozen, info.optimized, info.warmup_ms, to_string(info.precision),
        info.precision_note.c_str(), info.threads,
        info.cores.empty() ? "not pinned" : format_cpu_list(info.cores).c_str());
    {
      std::lock_guard<std::mutex> lock(self->state->stats_lock);
      self->state->stats = Stats{};
      self->state->stats.load_ms = info.load_ms + info.optimize_ms + info.warmup_ms;
      self->state->stats.read_ms = info.load_ms;
      self->state->stats.optimize_ms = info.optimize_ms;
      self->state->stats.warmup_ms = info.warmup_ms;
      self->state->stats.active_precision = to_string(info.precision);
    }
    self->state->rt = std::move(rt);
    return TRUE;
  } catch (const Error& e) {
    return report_start_error(self, e, s.model);
  } catch (const std::bad_alloc&) {
    GST_ELEMENT_ERROR(self, LIBRARY, INIT,
                      ("Out of memory while loading model '%s' (corrupt file?).", s.model.c_str()),
                      (nullptr));
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, LIBRARY, INIT,
                      ("Model '%s' could not be loaded: %s", s.model.c_str(), e.what()), (nullptr));
  } catch (...) {
    GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("Model '%s' could not be loaded.", s.model.c_str()),
                      (nullptr));
  }
  return FALSE;
}

static gboolean gst_torchinfer_stop(GstBaseTransform* trans) {
  auto* self = GST_TORCHINFER(trans);
  try {
    self->state->rt.reset();
  } catch (...) {
  }
  return TRUE;
}

static gboolean gst_torchinfer_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  auto* self = GST_TORCHINFER(trans);
  Runtime* rt = self->state->rt.get();
  GstVideoInfo info;
  PixelFormat pf;
  if (!gst_video_info_from_caps(&info, incaps) ||
      !to_pixel_format(GST_VIDEO_INFO_FORMAT(&info), &pf)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("torchinfer cannot handle this video format."),
                      ("caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  if (!rt) return FALSE;
  rt->info = info;
  rt->have_info = true;
  return TRUE;
}

static FrameView frame_view(const GstVideoFrame& f) {
  FrameView v;
  to_pixel_format(GST_VIDEO_FRAME_FORMAT(&f), &v.format);
  v.width = GST_VIDEO_FRAME_WIDTH(&f);
  v.height = GST_VIDEO_FRAME_HEIGHT(&f);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f) && p < 3; ++p) {
    v.planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
    v.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&f, p);
  }
  const GstVideoColorimetry& c = f.info.colorimetry;
  v.matrix = c.matrix == GST_VIDEO_COLOR_MATRIX_BT709    ? YuvMatrix::kBT709
             : c.matrix == GST_VIDEO_COLOR_MATRIX_BT2020 ? YuvMatrix::kBT2020
                                                         : YuvMatrix::kBT601;
  v.full_range = c.range == GST_VIDEO_COLOR_RANGE_0_255;
  return v;
}

static GstFlowReturn gst_torchinfer_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHINFER(trans);
  Runtime* rt = self->state->rt.get();
  if (!rt || !rt->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Received video before the format was negotiated."),
                      (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &rt->info, buf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED,
                      ("Could not read a video frame (buffer too small for its caps)."), (nullptr));
    return GST_FLOW_ERROR;
  }
  bool mapped = true;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    // A float slot is at least as large as a byte slot: one buffer serves both.
    const FrameTransform tf =
        rt->config.input_uint8
            ? rt->pre->run(frame_view(frame), reinterpret_cast<std::uint8_t*>(rt->batch.data()))
            : rt->pre->run(frame_view(frame), rt->batch.data());
    gst_video_frame_unmap(&frame);
    mapped = false;
    const auto t1 = std::chrono::steady_clock::now();
    std::shared_ptr<const BatchOutput> out = rt->engine->run(rt->batch.data(), 1);

    const std::vector<TensorView> views = out->frame(0);
    auto* holder = new std::shared_ptr<const BatchOutput>(out);
    GBytes* owner = g_bytes_new_with_free_func(
        nullptr, 0, [](gpointer p) { delete static_cast<std::shared_ptr<const BatchOutput>*>(p); },
        holder);
    GstTorchTensorMeta* meta = gst_buffer_add_torch_tensor_meta(buf, views.size(), owner);
    g_bytes_unref(owner);
    {
      std::lock_guard<std::mutex> lock(self->state->settings_lock);
      meta->model = g_strdup(self->state->settings.model.c_str());
      meta->model_instance_id = g_strdup(self->state->settings.model_instance_id.c_str());
    }
    meta->input_width = rt->config.input_width;
    meta->input_height = rt->config.input_height;
    meta->frame_width = GST_VIDEO_INFO_WIDTH(&rt->info);
    meta->frame_height = GST_VIDEO_INFO_HEIGHT(&rt->info);
    meta->transform = {tf.scale_x, tf.scale_y, tf.offset_x, tf.offset_y};
    meta->preprocess_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    meta->inference_ns = static_cast<guint64>(out->inference_ms() * 1e6);
    meta->batch_size = 1;
    meta->batch_index = 0;
    for (std::size_t i = 0; i < views.size(); ++i) {
      GstTorchTensor& t = meta->tensors[i];
      if (views[i].dims.size() > GST_TORCH_MAX_DIMS)
        throw Error(ErrorKind::kModelInvalid,
                    "output '" + views[i].name + "' has more than 8 dimensions");
      t.name = g_strdup(views[i].name.c_str());
      t.dtype = to_gst_dtype(views[i].dtype);
      t.n_dims = views[i].dims.size();
      std::copy(views[i].dims.begin(), views[i].dims.end(), t.dims);
      t.data = views[i].data;
      t.size = views[i].bytes;
    }

    if (rt->config.task == Task::kClassification) {
      const TensorView* scores = nullptr;
      for (const auto& v : views)
        if (looks_like_class_scores(v)) {
          scores = &v;
          break;
        }
      if (scores) {
        attach_classification(buf, decode_top_k(*scores, rt->config.top_k,
                                                rt->config.output_activation, rt->config.labels));
      } else if (!rt->warned_not_classifier) {
        rt->warned_not_classifier = true;
        GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                            ("Model output is not a vector of class scores; no labels attached."),
                            ("set task=raw or task=detection for this model"));
      }
    }
    std::lock_guard<std::mutex> lock(self->state->stats_lock);
    self->state->stats.frames++;
    self->state->stats.last_inference_ms = out->inference_ms();
  } catch (const std::exception& e) {
    if (mapped) gst_video_frame_unmap(&frame);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Inference failed: %s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  } catch (...) {
    if (mapped) gst_video_frame_unmap(&frame);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Inference failed."), (nullptr));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchinfer_finalize(GObject* object) {
  auto* self = GST_TORCHINFER(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchinfer_parent_class)->finalize(object);
}

static void gst_torchinfer_class_init(GstTorchInferClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_torchinfer_set_property;
  gobject_class->get_property = gst_torchinfer_get_property;
  gobject_class->finalize = gst_torchinfer_finalize;
  install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "PyTorch inference", "Filter/Analyzer/Video",
                                        "Runs a TorchScript model on raw video frames (YUY2, RGB, "
                                        "...) and attaches the results as metadata",
                                        "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchinfer_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchinfer_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchinfer_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchinfer_transform_ip);
  trans_class->passthrough_on_same_caps = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_torchinfer_debug, "torchinfer", 0, "TorchScript inference on video");
}

static void gst_torchinfer_init(GstTorchInfer* self) {
  self->state = new State();
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
