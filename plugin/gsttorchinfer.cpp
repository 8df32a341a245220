/**
 * SECTION:element-torchinfer
 *
 * Runs a TorchScript model on video frames and attaches the outputs as
 * GstTorchTensorMeta (plus a classification custom meta for classifiers).
 * Video passes through untouched and in order; frames are preprocessed
 * straight from the camera format, so no videoconvert/videoscale is needed.
 *
 * The streaming thread preprocesses each frame into the next slot of a batch;
 * the batcher's worker runs the model once per batch on pinned cores; this
 * element's source pad task pushes the frames downstream in their original
 * order with their results.
 *
 *   gst-launch-1.0 v4l2src ! video/x-raw,format=YUY2 ! torchinfer model=net.pt batch-size=4 !
 * fakesink
 */
#include "gsttorchinfer.h"

#include <gst/video/video.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "batching/model_registry.h"
#include "common/cpu_set.h"
#include "common/error.h"
#include "element-errors.h"
#include "preprocess/preprocess.h"
#include "torchinfer-element.h"
#include "torchinfer-load.h"
#include "torchinfer-properties.h"
#include "torchinfer-settings.h"
#include "video-frame.h"

GST_DEBUG_CATEGORY(gst_torchinfer_debug);
#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;

OwnedRef torchinfer::gst::own(GstMiniObject* o) {
  return OwnedRef(o, [](void* p) { gst_mini_object_unref(static_cast<GstMiniObject*>(p)); });
}

G_DEFINE_TYPE(GstTorchInfer, gst_torchinfer, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(torchinfer, "torchinfer", GST_RANK_NONE, GST_TYPE_TORCHINFER);

// ---- model loading and hot reload -------------------------------------

static guint64 our_latency_ns(const Settings& s, const LoadedModel& m) {
  const double wait_ms = s.batch_size > 1 ? s.batch_timeout_us / 1000.0 : 0.0;
  return static_cast<guint64>((wait_ms + m.batch_ms) * 1e6);
}

// Under settings_lock.
static void record_load_stats(State* st, const LoadedModel& m) {
  const EngineInfo& info = m.engine->info();
  st->stats.load_ms = info.load_ms + info.optimize_ms + info.warmup_ms;
  st->stats.read_ms = info.load_ms;
  st->stats.optimize_ms = info.optimize_ms;
  st->stats.warmup_ms = info.warmup_ms;
  st->stats.active_precision = to_string(info.precision);
  st->stats.active_lanes = m.lane_count();
}

// The element whose reload the calling thread is running (reload_model):
// told last, once every other sharer has been (see on_reload).
static thread_local const GstTorchInfer* reloading_self = nullptr;

// Takes a newer generation of the instance's model as this element's, once,
// and says so (message, notify::model). A restart then loads the file that
// ran.
static void adopt_model(GstTorchInfer* self, const std::shared_ptr<const LoadedModel>& m) {
  State* st = self->state;
  int seen = st->generation.load();
  do {
    if (m->generation <= seen) return;
  } while (!st->generation.compare_exchange_weak(seen, m->generation));
  st->latency_ns = our_latency_ns(st->run, *m);
  {
    std::lock_guard<std::mutex> lock(st->settings_lock);
    record_load_stats(st, *m);
    st->settings.model = m->path;
    st->settings.model_config.clear();  // a reload reads the new model's own sidecar
  }
  post_model_reloaded(GST_ELEMENT(self), *m);
  g_object_notify(G_OBJECT(self), "model");
}

// The running instance's listener (RunningModel), on the thread of
// whichever sharer reloaded it. The sharer that reloaded adopts after the
// reload returned, so that its own "torchinfer-model-reloaded" comes once
// every other sharer has been told.
static void on_reload(GstTorchInfer* self, const std::shared_ptr<const LoadedModel>& m) {
  if (reloading_self != self) adopt_model(self, m);
}

// False, after posting the error, for settings that cannot start.
static bool settings_usable(GstTorchInfer* self, const Settings& s) {
  if (s.model.empty()) {
    post_error(GST_ELEMENT(self), ErrorKind::kNotFound,
               "No model file set: give torchinfer a model=<file.pt>.");
    return false;
  }
  if (s.inference_region == REGION_ROI_LIST && s.crop.width > 0) {
    post_error(GST_ELEMENT(self), ErrorKind::kConfigInvalid,
               "crop and inference-region=roi-list exclude each other: in roi-list mode each "
               "region of interest is the crop. Unset crop.");
    return false;
  }
  if (s.inference_region == REGION_TILES && s.crop.width > 0) {
    post_error(GST_ELEMENT(self), ErrorKind::kConfigInvalid,
               "crop and inference-region=tiles exclude each other: the tiles cover the whole "
               "frame. Unset crop.");
    return false;
  }
  return true;
}

// This element's batcher, or the one shared under model-instance-id.
static std::shared_ptr<Batcher> acquire_batcher(GstTorchInfer* self, const Settings& s,
                                                const ModelConfig& config) {
  auto make = [&] {
    auto model = load_for_element(GST_ELEMENT(self), s, config, 1);
    BatcherOptions bo;
    bo.batch_size = s.batch_size;
    bo.timeout = std::chrono::microseconds(s.batch_timeout_us);
    return std::make_shared<Batcher>(model, bo);
  };
  return s.model_instance_id.empty()
             ? make()
             : ModelRegistry::instance().acquire(s.model_instance_id, sharing_key(s, config), make);
}

static SessionOptions session_options(const Settings& s, const LoadedModel& model,
                                      const ResolvedContract& contract) {
  SessionOptions so;
  so.inference_interval = s.inference_interval;
  so.stats_interval = std::chrono::milliseconds(s.stats_interval_ms);
  so.preprocess_for = [s](const ModelConfig& config) { return preprocess_options(s, config); };
  so.region_mode = s.inference_region != REGION_FULL_FRAME;
  so.tiles = s.inference_region == REGION_TILES;
  // Tiles are regions without a label, an id or padding (the roi-list options do not apply).
  if (s.inference_region == REGION_ROI_LIST) {
    so.regions.classes = contract.object_classes.value;
    so.regions.min_size = s.min_object_size;
    so.regions.padding = contract.object_padding.value;
    so.regions.reclassify_interval = s.reclassify_interval;
    so.regions.deskew = s.deskew;
  }
  so.preprocess_in_batch = s.preprocess_on == PREPROCESS_INFERENCE_THREADS ||
                           (s.preprocess_on == PREPROCESS_AUTO &&
                            preprocess_in_batch_by_default(
                                model.total_threads(), static_cast<int>(allowed_cpus().size())));
  so.gate.enabled = s.inference_gate == GATE_MOTION;
  so.gate.threshold = s.motion_threshold;
  so.gate.min_area = s.motion_min_area;
  so.gate.hold = s.motion_hold;
  so.gate.keyframe_interval = s.motion_keyframe_interval;
  so.gate.input_bits = s.input_bits;
  return so;
}

// The run's settings and the streaming and output threads' state, fresh
// for a run of `s` (neither thread runs yet).
static void reset_run_state(GstTorchInfer* self, const Settings& s, const LoadedModel& model,
                            const ResolvedContract& contract, const std::string& sidecar) {
  State* st = self->state;
  {
    std::lock_guard<std::mutex> lock(st->settings_lock);
    record_load_stats(st, model);
  }
  st->run = s;
  // The tiles' settings as resolved against the sidecar (read at start).
  st->run.tile_width = contract.tile_width.value;
  st->run.tile_height = contract.tile_height.value;
  st->run.tile_overlap = contract.tile_overlap.value;
  gchar* name = gst_element_get_name(self);
  st->name = name;
  g_free(name);
  st->object_classes = contract.object_classes.value;
  st->object_classes_sidecar =
      contract.object_classes.from == ValueSource::kSidecar ? sidecar : std::string();
  st->latency_ns = our_latency_ns(s, model);
  st->generation = model.generation;
  const auto in = st->input.borrow();
  in->have_info = false;
  in->object_class_checked =
      s.inference_region != REGION_ROI_LIST || contract.object_classes.value.empty();
  *st->output.borrow() = OutputState{};
}

static bool gst_torchinfer_start(GstTorchInfer* self) {
  State* st = self->state;
  Settings s;
  {
    std::lock_guard<std::mutex> lock(st->settings_lock);
    s = st->settings;
  }
  if (!settings_usable(self, s)) return false;
  try {
    const ModelConfig config = resolve_model_config(s.model, s.model_config, s.overrides());
    std::shared_ptr<Batcher> batcher = acquire_batcher(self, s, config);
    std::shared_ptr<const LoadedModel> model = batcher->model();
    const ResolvedContract contract = resolve_contract(config.contract, s.contract_overrides());
    post_contract(GST_ELEMENT(self), contract);
    reset_run_state(self, s, *model, contract, config.source);
    SessionOptions so = session_options(s, *model, contract);
    GST_INFO_OBJECT(self, "preprocessing on the %s",
                    so.preprocess_in_batch ? "inference threads" : "streaming thread");
    st->session.start(batcher, std::move(so));
    st->session.set_skip_when_busy(s.drop_policy == DROP_SKIP);
    st->model.start(std::move(batcher),
                    [self](const std::shared_ptr<const LoadedModel>& m) { on_reload(self, m); });
    return true;
  } catch (const std::exception& e) {
    post_load_error(GST_ELEMENT(self), e, s.model);
  } catch (...) {
    post_error(GST_ELEMENT(self), ErrorKind::kModelInvalid,
               "Model '" + s.model + "' could not be loaded.");
  }
  return false;
}

static void gst_torchinfer_stop(GstTorchInfer* self) {
  State* st = self->state;
  // A reload in progress ends first: its model is adopted, so that a
  // restart loads the file that ran.
  st->model.stop();
  // The last element holding a batcher destroys it here, which waits for
  // the batch in flight (one forward()).
  st->session.stop();
}

// Loads `path` off the streaming path and switches the instance to it;
// the other sharers adopt it through their subscriptions, this element
// after them.
static void reload_model(GstTorchInfer* self, const std::string& path, Batcher& batcher) {
  try {
    reloading_self = self;
    std::shared_ptr<const LoadedModel> m =
        reload_for_element(GST_ELEMENT(self), self->state->run, path, batcher);
    reloading_self = nullptr;
    adopt_model(self, m);
  } catch (const std::exception& e) {
    reloading_self = nullptr;
    GST_ELEMENT_WARNING(
        self, RESOURCE, FAILED,
        ("New model '%s' could not be loaded; still running the previous model.", path.c_str()),
        ("%s", e.what()));
  }
}

static void start_reload(GstTorchInfer* self, const char* path) {
  State* st = self->state;
  if (!path || !*path) {
    g_warning("torchinfer: the model cannot be unset while running");
    return;
  }
  const std::string file = path;
  if (st->model.reload([self, file](Batcher& b) { reload_model(self, file, b); })) return;
  // Stopped meanwhile: the next start loads `model`.
  std::lock_guard<std::mutex> settings(st->settings_lock);
  st->settings.model = file;
}

// ---- properties ----------------------------------------------------------

// The read-only properties' answers: the session's live figures and those
// of the latest load (read under settings_lock, which the getter holds).
class ElementStatus final : public Status {
 public:
  explicit ElementStatus(State& st) : st_(st) {}
  Stats load() const override { return st_.stats; }
  std::uint64_t frames_inferred() const override { return st_.session.frames_inferred(); }
  double last_inference_ms() const override { return st_.session.last_inference_ms(); }
  StatsSnapshot stream() const override { return st_.session.snapshot(false); }

 private:
  State& st_;
};

static void gst_torchinfer_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHINFER(object);
  const bool running = gst::element_running(GST_ELEMENT(self));
  if (running && prop_id == PROP_MODEL) {
    start_reload(self, g_value_get_string(value));
    return;
  }
  std::lock_guard<std::mutex> lock(self->state->settings_lock);
  properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchinfer_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  State* st = GST_TORCHINFER(object)->state;
  if (prop_id == PROP_MODEL) {
    // Running: the instance's file, whichever sharer reloaded it.
    std::optional<std::string> file = st->model.file();
    if (!file) {
      std::lock_guard<std::mutex> lock(st->settings_lock);
      file = st->settings.model;
    }
    g_value_set_string(value, file->empty() ? nullptr : file->c_str());  // unset reads NULL
    return;
  }
  const ElementStatus now(*st);
  std::lock_guard<std::mutex> lock(st->settings_lock);
  properties().get(st->settings, now, prop_id, value, pspec);
}

// ---- pads and states -----------------------------------------------------

static gboolean gst_torchinfer_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                                 gboolean active) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  if (active) {
    st->session.resume();
    return gst_pad_start_task(pad, gst_torchinfer_loop, self, nullptr);
  }
  st->session.set_flushing();
  return gst_pad_stop_task(pad);
}

static gboolean gst_torchinfer_sink_activate_mode(GstPad*, GstObject* parent, GstPadMode mode,
                                                  gboolean active) {
  auto* self = GST_TORCHINFER(parent);
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  // Unblocks a chain() waiting for a batch buffer or queue space before the
  // pad takes its stream lock.
  if (!active) self->state->session.set_flushing();
  return TRUE;
}

static GstStateChangeReturn gst_torchinfer_change_state(GstElement* element,
                                                        GstStateChange transition) {
  auto* self = GST_TORCHINFER(element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !gst_torchinfer_start(self))
    return GST_STATE_CHANGE_FAILURE;
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_torchinfer_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE))
    gst_torchinfer_stop(self);
  return ret;
}

static void gst_torchinfer_finalize(GObject* object) {
  auto* self = GST_TORCHINFER(object);
  delete self->state;  // its RunningModel waits for a reload in progress
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchinfer_parent_class)->finalize(object);
}

static void gst_torchinfer_class_init(GstTorchInferClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);

  gobject_class->set_property = gst_torchinfer_set_property;
  gobject_class->get_property = gst_torchinfer_get_property;
  gobject_class->finalize = gst_torchinfer_finalize;
  properties().install(gobject_class);

  // Every format of the core's pixel-format table, any size and rate.
  GstCaps* caps = supported_video_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(element_class, "PyTorch inference", "Filter/Analyzer/Video",
                                        "Runs a TorchScript model on raw video frames (YUY2, RGB, "
                                        "...) in batches and attaches the results as metadata",
                                        "torchinfer developers");
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_torchinfer_change_state);

  GST_DEBUG_CATEGORY_INIT(gst_torchinfer_debug, "torchinfer", 0, "TorchScript inference on video");
}

static void gst_torchinfer_init(GstTorchInfer* self) {
  self->state = new State();
  self->sinkpad = gst_pad_new_from_template(
      gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(self), "sink"), "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_torchinfer_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_torchinfer_sink_event));
  gst_pad_set_query_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_torchinfer_sink_query));
  gst_pad_set_activatemode_function(self->sinkpad,
                                    GST_DEBUG_FUNCPTR(gst_torchinfer_sink_activate_mode));
  GST_PAD_SET_PROXY_CAPS(self->sinkpad);
  GST_PAD_SET_PROXY_ALLOCATION(self->sinkpad);
  // As GstBaseTransform does: caps that leave a field open (no framerate,
  // say) are accepted when they can intersect what downstream takes.
  GST_PAD_SET_ACCEPT_INTERSECT(self->sinkpad);
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_template(
      gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(self), "src"), "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_torchinfer_src_query));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_torchinfer_src_activate_mode));
  GST_PAD_SET_PROXY_CAPS(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
}
