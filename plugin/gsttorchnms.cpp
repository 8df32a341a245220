/**
 * SECTION:element-torchnms
 *
 * Decodes the GstTorchTensorMeta of each frame (YOLOv5, YOLOv8, SSD,
 * classification or YOLOv8-obb layout; the last adds a "rotated_box" param
 * to each ROI), runs non-maximum suppression and attaches one
 * GstVideoRegionOfInterestMeta per detection with a "detection" structure;
 * video passes through untouched.
 *
 *   gst-launch-1.0 ... ! torchinfer model=det.pt ! torchnms decoder=yolov5 ! torchoverlay ! ...
 *
 * Decode time per frame is in the read-only `stats` property and, with
 * `stats-interval`, in periodic "torchnms-stats" element messages (one more
 * at EOS), like torchinfer's.
 */
#include "gsttorchnms.h"

#include "classification-meta.h"

#include <gst/video/video.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/model_config.h"
#include "common/stream_stats.h"
#include "decode/classification.h"
#include "decode/containment.h"
#include "decode/detection.h"
#include "decode/yolov8_obb.h"
#include "decode/yolov8_seg.h"
#include "element-errors.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "mask-param.h"
#include "tensor-views.h"
#include "torchnms-properties.h"
#include "torchnms-tiles.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchnms_debug);
#define GST_CAT_DEFAULT gst_torchnms_debug

using namespace torchinfer;

namespace nms = torchinfer::gst::nms;
using namespace torchinfer::gst::nms;  // Settings, the decoder enum and its defaults

namespace {

// What applies to the current model, resolved on its first frame.
struct Resolved {
  std::string model;  // the tensor meta's model it was resolved for
  std::optional<Decoder> decoder;
  DetectionOptions options;
  int top_k = 5;
  Activation activation = Activation::kSoftmax;
  double mask_threshold = kDefaultMaskThreshold;  // yolov8-seg
};

// yolov8-seg's mask threshold, property over sidecar over default, and
// where it came from for the start log (as torchinfer's contract says).
void resolve_mask_threshold(GstTorchNms* self, const Settings& s, const ModelConfig& cfg,
                            Resolved& r) {
  const char* from = s.mask_threshold ? "property" : cfg.mask_threshold ? "sidecar" : "default";
  r.mask_threshold = s.mask_threshold.value_or(cfg.mask_threshold.value_or(kDefaultMaskThreshold));
  if (r.decoder == Decoder::kYolov8Seg)
    GST_INFO_OBJECT(self, "model %s: mask-threshold %g (%s)", r.model.c_str(), r.mask_threshold,
                    from);
}

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex lock;  // guards settings and status
  Settings settings;
  Status status;
  Clock::time_point last_stats_post{};
  // streaming thread only
  Settings active;                  // copied at start
  std::vector<std::string> labels;  // from the labels property
  std::optional<Resolved> resolved;
  nms::TileDecodeCache tile_cache;  // inference-region=tiles: tiles carried over
  bool warned_no_meta = false;
  bool warned_dropped_masks = false;  // yolov8-seg masks past the frame's run budget
  bool warned_tile_masks = false;     // yolov8-seg on tiles: boxes only
  bool warned_invalid = false;        // yolov8-obb anchors dropped (counted in status.invalid)
  bool failed = false;                // an error was posted; later frames fail quietly
};

Decoder to_decoder(GstTorchNmsDecoder d) {
  switch (d) {
    case GST_TORCHNMS_DECODER_YOLOV8:
      return Decoder::kYolov8;
    case GST_TORCHNMS_DECODER_SSD:
      return Decoder::kSsd;
    case GST_TORCHNMS_DECODER_CLASSIFICATION:
      return Decoder::kClassification;
    case GST_TORCHNMS_DECODER_YOLOV8_SEG:
      return Decoder::kYolov8Seg;
    case GST_TORCHNMS_DECODER_YOLOV8_OBB:
      return Decoder::kYolov8Obb;
    default:
      return Decoder::kYolov5;
  }
}

}  // namespace

struct _GstTorchNms {
  GstBaseTransform parent;
  State* state;
};

G_DEFINE_TYPE(GstTorchNms, gst_torchnms, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchnms, "torchnms", GST_RANK_NONE, GST_TYPE_TORCHNMS);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));

static void post_stats(GstTorchNms* self, GstStructure* s) {
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

static void gst_torchnms_set_property(GObject* object, guint prop_id, const GValue* value,
                                      GParamSpec* pspec) {
  auto* self = GST_TORCHNMS(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  nms::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchnms_get_property(GObject* object, guint prop_id, GValue* value,
                                      GParamSpec* pspec) {
  auto* self = GST_TORCHNMS(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  nms::properties().get(self->state->settings, self->state->status, prop_id, value, pspec);
}

static gboolean gst_torchnms_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHNMS(trans);
  State& st = *self->state;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    st.active = st.settings;
    st.status = Status();
    st.last_stats_post = Clock::now();
  }
  st.resolved.reset();
  st.tile_cache = {};
  st.labels.clear();
  st.warned_no_meta = false;
  st.warned_dropped_masks = false;
  st.warned_tile_masks = false;
  st.warned_invalid = false;
  st.failed = false;
  try {
    if (!st.active.labels_file.empty()) st.labels = read_labels_file(st.active.labels_file);
    if (!st.active.model_config.empty()) parse_model_config(st.active.model_config);
  } catch (const std::exception& e) {
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kConfigInvalid, "");
    return FALSE;
  } catch (...) {
    gst::post_error(GST_ELEMENT(self), ErrorKind::kConfigInvalid,
                    "Could not read torchnms' labels or model-config.");
    return FALSE;
  }
  return TRUE;
}

// Properties over sidecar over defaults, for the model named in the meta.
static Resolved resolve(GstTorchNms* self, const std::string& model) {
  State& st = *self->state;
  const Settings& s = st.active;
  ModelConfig cfg;
  try {
    cfg = resolve_model_config(model, s.model_config, {});
  } catch (const Error& e) {
    if (!s.model_config.empty()) throw;
    // torchinfer found its configuration another way (or the file moved):
    // properties and defaults still work.
    GST_WARNING_OBJECT(self, "cannot read the sidecar of '%s': %s", model.c_str(), e.what());
  }
  Resolved r;
  r.model = model;
  if (s.decoder != GST_TORCHNMS_DECODER_AUTO)
    r.decoder = to_decoder(s.decoder);
  else if (cfg.decoder)
    r.decoder = cfg.decoder;
  else if (cfg.task == Task::kClassification)
    r.decoder = Decoder::kClassification;
  r.options.confidence_threshold =
      s.confidence.value_or(cfg.confidence_threshold.value_or(kDefaultConfidence));
  r.options.iou_threshold = s.iou.value_or(cfg.iou_threshold.value_or(kDefaultIou));
  r.options.max_detections = static_cast<int>(
      s.max_detections.value_or(cfg.max_detections.value_or(kDefaultMaxDetections)));
  r.options.class_agnostic = s.class_agnostic;
  r.options.labels = st.labels.empty() ? cfg.labels : st.labels;
  r.top_k = cfg.top_k;
  r.activation = cfg.output_activation;
  resolve_mask_threshold(self, s, cfg, r);
  GST_INFO_OBJECT(self,
                  "model %s: decoder %s, confidence >= %g, IoU > %g suppresses, at most %d, "
                  "%s NMS, %zu labels (config: %s)",
                  model.c_str(), r.decoder ? to_string(*r.decoder) : "none",
                  r.options.confidence_threshold, r.options.iou_threshold, r.options.max_detections,
                  r.options.class_agnostic ? "class-agnostic" : "per-class",
                  r.options.labels.size(), cfg.source.empty() ? "none" : cfg.source.c_str());
  return r;
}

static GstFlowReturn fail_decode(GstTorchNms* self, const std::string& what,
                                 const std::string& model) {
  self->state->failed = true;
  gst::post_error(GST_ELEMENT(self), ErrorKind::kStreamData, what,
                  "model '" + model +
                      "'; choose the decoder with torchnms decoder=... or the sidecar's "
                      "\"decoder\"");
  return GST_FLOW_ERROR;
}

// One decoded frame: counters, decode time, and a stats message when due.
static void record_decode(GstTorchNms* self, Clock::time_point t0, std::size_t detections,
                          std::size_t contained = 0, const MaskCounts* masks = nullptr) {
  State& st = *self->state;
  const auto now = Clock::now();
  GstStructure* due = nullptr;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    st.status.decode_ms.add(std::chrono::duration<double, std::milli>(now - t0).count());
    ++st.status.frames;
    st.status.detections += detections;
    st.status.contained += contained;
    if (masks) {
      st.status.masks += detections - masks->dropped;
      st.status.masks_empty += masks->empty;
      st.status.masks_full += masks->full;
      st.status.masks_invalid += masks->invalid;
      st.status.masks_dropped += masks->dropped;
    }
    const guint interval = st.settings.stats_interval_ms;
    if (interval > 0 && now - st.last_stats_post >= std::chrono::milliseconds(interval)) {
      st.last_stats_post = now;
      due = stats_structure(st.status);
    }
  }
  if (due) post_stats(self, due);
}

static gboolean gst_torchnms_sink_event(GstBaseTransform* trans, GstEvent* event) {
  auto* self = GST_TORCHNMS(trans);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    GstStructure* last = nullptr;
    {
      std::lock_guard<std::mutex> lock(self->state->lock);
      if (self->state->settings.stats_interval_ms > 0) last = stats_structure(self->state->status);
    }
    if (last) post_stats(self, last);
  }
  return GST_BASE_TRANSFORM_CLASS(gst_torchnms_parent_class)->sink_event(trans, event);
}

// The full-frame result of the torchinfer whose model-instance-id is `id`.
static GstTorchTensorMeta* meta_of_instance(GstBuffer* buf, const std::string& id) {
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    auto* t = reinterpret_cast<GstTorchTensorMeta*>(m);
    if (t->roi_id < 0 && t->tile_count == 0 && g_strcmp0(t->model_instance_id, id.c_str()) == 0)
      return t;
  }
  return nullptr;
}

// False (after the once-per-run warning) when the frame has no usable
// result: no torchinfer upstream (with model-instance-id: none of that
// instance), or NaN/infinite outputs.
static GstTorchTensorMeta* usable_meta(GstTorchNms* self, GstBuffer* buf) {
  State& st = *self->state;
  GstTorchTensorMeta* meta = st.active.model_instance_id.empty()
                                 ? gst_buffer_get_torch_tensor_meta(buf)
                                 : meta_of_instance(buf, st.active.model_instance_id);
  if (!meta) {
    // Once per run as a bus warning (a pipeline without torchinfer upstream
    // is a mistake worth seeing); later frames only in the debug log, since
    // torchinfer may skip frames on purpose.
    if (!st.warned_no_meta) {
      st.warned_no_meta = true;
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                          ("Frame without torchinfer results passed through unchanged."),
                          ("torchnms needs torchinfer upstream; further frames without results "
                           "are logged at debug level only"));
    }
    GST_DEBUG_OBJECT(self, "no tensor meta on buffer %" GST_PTR_FORMAT, buf);
    return nullptr;
  }
  if (!meta->valid) {
    // NaN/infinite outputs: torchinfer has warned; boxes from them are noise.
    GST_LOG_OBJECT(self, "invalid result on buffer %" GST_PTR_FORMAT ", no detections", buf);
    return nullptr;
  }
  return meta;
}

static GstFlowReturn classify(GstTorchNms* self, GstBuffer* buf, const Resolved& r,
                              const std::vector<TensorView>& views, const std::string& model,
                              Clock::time_point t0) {
  for (const auto& v : views)
    if (looks_like_class_scores(v)) {
      gst::attach_classification(buf, decode_top_k(v, r.top_k, r.activation, r.options.labels));
      record_decode(self, t0, 0);
      return GST_FLOW_OK;
    }
  std::string found;
  for (const auto& v : views) found += " '" + v.name + "' " + describe(v);
  return fail_decode(
      self,
      "decoder classification expects one vector of class scores [1, classes]; the model gives" +
          found,
      model);
}

// yolov8-obb anchors with a NaN/infinite or empty box or angle: counted
// (stats "invalid"), and said once per run on the bus.
static void count_invalid(GstTorchNms* self, std::uint64_t n) {
  State& st = *self->state;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    st.status.invalid += n;
  }
  if (st.warned_invalid) return;
  st.warned_invalid = true;
  GST_ELEMENT_WARNING(self, STREAM, DECODE,
                      ("The model gave confident rotated boxes with a non-finite or empty box "
                       "or angle; they were dropped."),
                      ("%" G_GUINT64_FORMAT " on this frame; the running count is the stats' "
                       "\"invalid\" field (only this first time on the bus)",
                       static_cast<guint64>(n)));
}

static void add_rotated_box(GstVideoRegionOfInterestMeta* roi, const RotatedBox& r) {
  const GstTorchRotatedBox b{r.cx, r.cy, r.width, r.height, r.angle};
  gst_torch_roi_add_rotated_box(roi, &b);
}

// model-instance-id set: the detection param names it, so that readers
// downstream tell this torchnms' detections from another's.
static void tag_instance(GstVideoRegionOfInterestMeta* roi, GstTorchNms* self) {
  GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME);
  if (s)
    gst_structure_set(s, "model-instance-id", G_TYPE_STRING,
                      self->state->active.model_instance_id.c_str(), nullptr);
}

static void detect(GstTorchNms* self, GstBuffer* buf, const GstTorchTensorMeta* meta,
                   const Resolved& r, const std::vector<TensorView>& views, Clock::time_point t0) {
  const FrameMapping m = nms::mapping_of(meta);
  ObbCounts obb;
  std::vector<Detection> dets = *r.decoder == Decoder::kYolov8Obb
                                    ? decode_yolov8_obb(views, r.options, m, &obb)
                                    : decode_detections(*r.decoder, views, r.options, m);
  if (obb.invalid) count_invalid(self, obb.invalid);
  const std::size_t contained = suppress_contained(dets, self->state->active.suppress_contained);
  // Masks of the detections kept (after NMS and suppress-contained) only.
  const bool seg = *r.decoder == Decoder::kYolov8Seg;
  const double threshold = r.mask_threshold;
  MaskCounts counts;
  const std::vector<Mask> masks =
      seg ? decode_masks(views, dets, m, threshold, &counts) : std::vector<Mask>();
  for (std::size_t i = 0; i < dets.size(); ++i) {
    const Detection& d = dets[i];
    GstVideoRegionOfInterestMeta* roi = gst_buffer_add_torch_detection(
        buf, d.label.c_str(), d.label_id, d.confidence, d.x_min, d.y_min, d.x_max, d.y_max,
        meta->frame_width, meta->frame_height);
    if (roi && seg && !masks[i].dropped) gst::add_mask_param(roi, masks[i], threshold);
    if (roi && !self->state->active.model_instance_id.empty()) tag_instance(roi, self);
    if (roi && d.rotated) add_rotated_box(roi, *d.rotated);
  }
  if (counts.dropped > 0 && !self->state->warned_dropped_masks) {
    // Once per run; stats' masks-dropped counts every one.
    self->state->warned_dropped_masks = true;
    GST_ELEMENT_WARNING(self, STREAM, DECODE,
                        ("Masks dropped: a frame's masks passed %zu runs.", kMaxMaskRunsPerFrame),
                        ("%" G_GUINT64_FORMAT " of %zu detections on this frame have no mask "
                         "(the model's prototypes alternate cell by cell?); stats' masks-dropped "
                         "counts them all",
                         counts.dropped, dets.size()));
  }
  GST_LOG_OBJECT(self, "%zu detections, %zu inside another", dets.size(), contained);
  record_decode(self, t0, dets.size(), contained, seg ? &counts : nullptr);
}

// torchinfer inference-region=tiles: the tiles' detections merged into the
// frame's (torchnms-tiles.h).
static void detect_tiles(GstTorchNms* self, GstBuffer* buf,
                         const std::vector<const GstTorchTensorMeta*>& tiles, const Resolved& r,
                         Clock::time_point t0) {
  if (*r.decoder == Decoder::kYolov8Seg && !self->state->warned_tile_masks) {
    // Once per run: a mask cut by a tile border has no merge yet, so the
    // detections keep their boxes and carry no mask.
    self->state->warned_tile_masks = true;
    GST_ELEMENT_WARNING(self, STREAM, DECODE,
                        ("Masks are not decoded for inference-region=tiles: the detections carry "
                         "boxes only."),
                        ("model '%s'; for masks infer the whole frame or windows of it (torchinfer "
                         "crop=)",
                         tiles[0]->model ? tiles[0]->model : ""));
  }
  std::vector<Detection> dets =
      decode_tiles(*r.decoder, tiles, r.options, &self->state->tile_cache);
  const std::size_t contained = suppress_contained(dets, self->state->active.suppress_contained);
  for (const Detection& d : dets)
    gst_buffer_add_torch_detection(buf, d.label.c_str(), d.label_id, d.confidence, d.x_min, d.y_min,
                                   d.x_max, d.y_max, tiles[0]->frame_width, tiles[0]->frame_height);
  GST_LOG_OBJECT(self, "%zu tiles: %zu detections", tiles.size(), dets.size());
  record_decode(self, t0, dets.size(), contained);
}

// A failure while decoding: bad tensors fail the frame; a sidecar named by
// model-config that changed or vanished since start is a settings error.
static GstFlowReturn decode_failed(GstTorchNms* self, const std::exception& e,
                                   const std::string& model) {
  const auto* err = dynamic_cast<const Error*>(&e);
  const ErrorKind kind = err ? err->kind() : ErrorKind::kRuntime;
  if (kind == ErrorKind::kStreamData) return fail_decode(self, e.what(), model);
  self->state->failed = true;
  const bool settings = kind == ErrorKind::kNotFound || kind == ErrorKind::kConfigInvalid ||
                        kind == ErrorKind::kInvalidArgument;
  if (settings)
    gst::post_error(GST_ELEMENT(self), kind, e.what(), "model '" + model + "'");
  else
    gst::post_exception(GST_ELEMENT(self), e, ErrorKind::kRuntime, "Decoding failed: ");
  return GST_FLOW_ERROR;
}

static GstFlowReturn gst_torchnms_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHNMS(trans);
  State& st = *self->state;
  if (st.failed) return GST_FLOW_ERROR;
  const std::vector<const GstTorchTensorMeta*> tiles = tile_metas(buf);
  const GstTorchTensorMeta* meta = tiles.empty() ? usable_meta(self, buf) : tiles.front();
  if (!meta) return GST_FLOW_OK;
  const std::string model = meta->model ? meta->model : "";
  const auto t0 = Clock::now();
  try {
    const std::vector<TensorView> views = gst::tensor_views(meta);
    if (!st.resolved || st.resolved->model != model) {
      st.resolved = resolve(self, model);
      st.tile_cache = {};  // decoded with the old model's settings
      if (!st.resolved->decoder)
        return fail_decode(
            self,
            "No decoder for model '" + model +
                "': set decoder=yolov5|yolov8|yolov8-seg|yolov8-obb|ssd|classification on torchnms "
                "or "
                "\"decoder\" in the model's sidecar.",
            model);
      if (*st.resolved->decoder != Decoder::kClassification)
        check_detection_layout(*st.resolved->decoder, views);
    }
    if (!tiles.empty() && *st.resolved->decoder == Decoder::kClassification)
      return fail_decode(self, "inference-region=tiles needs a detection decoder", model);
    if (!tiles.empty()) {
      detect_tiles(self, buf, tiles, *st.resolved, t0);
      return GST_FLOW_OK;
    }
    if (*st.resolved->decoder == Decoder::kClassification)
      return classify(self, buf, *st.resolved, views, model, t0);
    detect(self, buf, meta, *st.resolved, views, t0);
    return GST_FLOW_OK;
  } catch (const std::exception& e) {
    return decode_failed(self, e, model);
  } catch (...) {
    st.failed = true;
    gst::post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Decoding failed.");
    return GST_FLOW_ERROR;
  }
}

static void gst_torchnms_finalize(GObject* object) {
  auto* self = GST_TORCHNMS(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchnms_parent_class)->finalize(object);
}

static void gst_torchnms_class_init(GstTorchNmsClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_torchnms_set_property;
  gobject_class->get_property = gst_torchnms_get_property;
  gobject_class->finalize = gst_torchnms_finalize;
  nms::install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch detection decoder and NMS", "Filter/Analyzer/Video",
      "Turns torchinfer output tensors into detections (region-of-interest metas) with "
      "non-maximum suppression",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchnms_start);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchnms_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchnms_sink_event);
  // Not passthrough: the buffer must be writable to take metas (its memory
  // is shared, not copied).
  trans_class->passthrough_on_same_caps = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_torchnms_debug, "torchnms", 0, "torchinfer detection decoding");
}

static void gst_torchnms_init(GstTorchNms* self) {
  self->state = new State();
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
