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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/cpu_set.h"
#include "common/error.h"
#include "element-errors.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"
#include "model/model_registry.h"
#include "preprocess/preprocess.h"
#include "stream/stream_session.h"
#include "torchinfer-load.h"
#include "torchinfer-properties.h"
#include "torchinfer-results.h"
#include "torchinfer-settings.h"

GST_DEBUG_CATEGORY(gst_torchinfer_debug);
#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;
using Clock = std::chrono::steady_clock;

namespace {

void unref_mini_object(void* p) {
  gst_mini_object_unref(static_cast<GstMiniObject*>(p));
}

OwnedRef own(GstMiniObject* o) {
  return OwnedRef(o, unref_mini_object);
}

// A buffer's pixels, mapped only for frames that go to the model. Holds the
// chain's reference: a flush may drop the queue's meanwhile. One per frame in
// flight, recycled through a free list: the chain allocates nothing per frame.
class BufferPixels : public FramePixels {
 public:
  static void* operator new(std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(free_lock());
      if (size == sizeof(BufferPixels) && !free_list().empty()) {
        void* p = free_list().back();
        free_list().pop_back();
        return p;
      }
    }
    return ::operator new(size);
  }
  static void operator delete(void* p, std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(free_lock());
      if (size == sizeof(BufferPixels) && free_list().size() < free_list().capacity()) {
        free_list().push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

  BufferPixels(GstVideoInfo* info, PixelFormat format, GstBuffer* buf)
      : info_(info), format_(format), buf_(buf) {}
  ~BufferPixels() override {
    unmap();
    gst_buffer_unref(buf_);
  }
  bool map(FrameView* view) override {
    if (!mapped_) mapped_ = gst_video_frame_map(&frame_, info_, buf_, GST_MAP_READ);
    if (!mapped_) return false;
    *view = frame_view(frame_, format_);
    return true;
  }
  void unmap() override {
    if (mapped_) gst_video_frame_unmap(&frame_);
    mapped_ = false;
  }

 private:
  // Never freed: every torchinfer in the process shares them, and exit
  // order is not ours to rely on.
  static std::mutex& free_lock() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::vector<void*>& free_list() {
    static auto* v = [] {
      auto* l = new std::vector<void*>;
      l->reserve(256);
      return l;
    }();
    return *v;
  }

  GstVideoInfo* info_;
  PixelFormat format_;  // Bayer frames map as GRAY8
  GstBuffer* buf_;
  GstVideoFrame frame_;
  bool mapped_ = false;
};

struct State {
  std::mutex settings_lock;  // guards settings
  Settings settings;
  std::mutex stats_lock;  // guards stats (load figures)
  Stats stats;

  // From start() to stop(); read by the streaming and output threads.
  Settings run;
  StreamSession session;
  std::atomic<guint64> latency_ns{0};

  // Streaming thread only.
  GstVideoInfo info;
  PixelFormat format = PixelFormat::kRGB;
  bool have_info = false;
  std::vector<RegionOfInterest> regions;  // the frame's ROIs (roi-list), reused frame to frame
  bool object_class_checked = false;      // against the labels of the regions' detector

  std::string name;  // the element's, for the results it attaches to ROIs

  // Output thread only.
  bool warned_not_classifier = false;
  guint64 regions_not_classified = 0;  // roi-list with a model that is not a classifier
  guint64 not_pushed = 0;              // output thread: frames let go since downstream's EOS
  BurstReport invalid_report;          // NaN/infinite results, warned once per burst
  SaturationReport saturation_report;  // GRAY16_LE samples above input-bits

  // Guards reload_thread and, for threads other than the streaming one,
  // the session's batcher (set in start, reset in stop).
  std::mutex reload_lock;
  std::thread reload_thread;
  // The generation of the instance's model this element last adopted
  // (adopt_model); a sharer's reload raises the instance's.
  std::atomic<int> generation{1};
  // From start to stop, under settings_lock: `model` reads the running file
  // from it, whichever sharer reloaded.
  std::shared_ptr<Batcher> running;
};

}  // namespace

struct _GstTorchInfer {
  GstElement parent;
  GstPad* sinkpad;
  GstPad* srcpad;
  State* state;
};

G_DEFINE_TYPE(GstTorchInfer, gst_torchinfer, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(torchinfer, "torchinfer", GST_RANK_NONE, GST_TYPE_TORCHINFER);

static void gst_torchinfer_loop(gpointer user_data);

// ---- model loading and hot reload -------------------------------------

static guint64 our_latency_ns(const Settings& s, const LoadedModel& m) {
  const double wait_ms = s.batch_size > 1 ? s.batch_timeout_us / 1000.0 : 0.0;
  return static_cast<guint64>((wait_ms + m.batch_ms) * 1e6);
}

static void record_load_stats(State* st, const LoadedModel& m) {
  const EngineInfo& info = m.engine->info();
  std::lock_guard<std::mutex> lock(st->stats_lock);
  st->stats.load_ms = info.load_ms + info.optimize_ms + info.warmup_ms;
  st->stats.read_ms = info.load_ms;
  st->stats.optimize_ms = info.optimize_ms;
  st->stats.warmup_ms = info.warmup_ms;
  st->stats.active_precision = to_string(info.precision);
  st->stats.active_lanes = m.lane_count();
}

static void set_running(State* st, std::shared_ptr<Batcher> batcher) {
  std::lock_guard<std::mutex> lock(st->settings_lock);
  st->running = std::move(batcher);
}

// Takes a newer generation of the instance's model as this element's, once,
// from whichever thread meets it first: the reload's, the output thread's
// with the first frame of it (another sharer reloaded), or stop's. A restart
// then loads the file that ran.
static void adopt_model(GstTorchInfer* self, const std::shared_ptr<const LoadedModel>& m,
                        bool announce) {
  State* st = self->state;
  int seen = st->generation.load();
  do {
    if (m->generation <= seen) return;
  } while (!st->generation.compare_exchange_weak(seen, m->generation));
  record_load_stats(st, *m);
  st->latency_ns = our_latency_ns(st->run, *m);
  {
    std::lock_guard<std::mutex> lock(st->settings_lock);
    st->settings.model = m->path;
    st->settings.model_config.clear();  // a reload reads the new model's own sidecar
  }
  if (!announce) return;
  post_model_reloaded(GST_ELEMENT(self), *m);
  g_object_notify(G_OBJECT(self), "model");
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

static SessionOptions session_options(const Settings& s, const LoadedModel& model) {
  SessionOptions so;
  so.inference_interval = s.inference_interval;
  so.stats_interval = std::chrono::milliseconds(s.stats_interval_ms);
  so.preprocess_for = [s](const ModelConfig& config) { return preprocess_options(s, config); };
  so.region_mode = s.inference_region == REGION_ROI_LIST;
  so.regions.classes = parse_class_list(s.object_class);
  so.regions.min_size = s.min_object_size;
  so.regions.padding = s.object_padding;
  so.regions.reclassify_interval = s.reclassify_interval;
  so.preprocess_in_batch = s.preprocess_on == PREPROCESS_INFERENCE_THREADS ||
                           (s.preprocess_on == PREPROCESS_AUTO &&
                            preprocess_in_batch_by_default(
                                model.total_threads(), static_cast<int>(allowed_cpus().size())));
  return so;
}

// The streaming and output threads' state, fresh for a run of `s`.
static void reset_run_state(GstTorchInfer* self, const Settings& s, const LoadedModel& model) {
  State* st = self->state;
  record_load_stats(st, model);
  st->run = s;
  gchar* name = gst_element_get_name(self);
  st->name = name;
  g_free(name);
  st->latency_ns = our_latency_ns(s, model);
  st->have_info = false;
  st->object_class_checked = s.inference_region != REGION_ROI_LIST || s.object_class.empty();
  st->warned_not_classifier = false;
  st->regions_not_classified = 0;
  st->not_pushed = 0;
  st->invalid_report = BurstReport{};
  st->saturation_report = SaturationReport{};
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
    reset_run_state(self, s, *model);
    SessionOptions so = session_options(s, *model);
    GST_INFO_OBJECT(self, "preprocessing on the %s",
                    so.preprocess_in_batch ? "inference threads" : "streaming thread");
    std::lock_guard<std::mutex> lock(st->reload_lock);
    set_running(st, batcher);
    st->session.start(std::move(batcher), std::move(so));
    st->session.set_skip_when_busy(s.drop_policy == DROP_SKIP);
    st->generation = model->generation;
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
  std::lock_guard<std::mutex> lock(st->reload_lock);
  if (st->reload_thread.joinable()) st->reload_thread.join();
  if (std::shared_ptr<Batcher> batcher = st->session.batcher())
    adopt_model(self, batcher->model(), false);
  set_running(st, nullptr);
  // The last element holding a batcher destroys it here, which waits for
  // the batch in flight (one forward()).
  st->session.stop();
}

// Loads `path` off the streaming path and switches the instance to it.
static void reload_model(GstTorchInfer* self, std::string path, std::shared_ptr<Batcher> batcher) {
  try {
    adopt_model(self, reload_for_element(GST_ELEMENT(self), self->state->run, path, *batcher),
                true);
  } catch (const std::exception& e) {
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
  std::lock_guard<std::mutex> lock(st->reload_lock);
  std::shared_ptr<Batcher> batcher = st->session.batcher();
  if (!batcher) {  // stopped meanwhile: the next start loads `model`
    std::lock_guard<std::mutex> settings(st->settings_lock);
    st->settings.model = path;
    return;
  }
  // One reload at a time; a second request waits for the first.
  if (st->reload_thread.joinable()) st->reload_thread.join();
  st->reload_thread = std::thread(reload_model, self, std::string(path), std::move(batcher));
}

// ---- properties ----------------------------------------------------------

// The read-only properties' answers: the session's live figures and those
// of the latest load.
class ElementStatus final : public Status {
 public:
  explicit ElementStatus(State& st) : st_(st) {}
  Stats load() const override {
    std::lock_guard<std::mutex> lock(st_.stats_lock);
    return st_.stats;
  }
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
    std::lock_guard<std::mutex> lock(st->settings_lock);
    const std::string& file = st->running ? st->running->model()->path : st->settings.model;
    g_value_set_string(value, file.empty() ? nullptr : file.c_str());  // unset reads NULL
    return;
  }
  const ElementStatus now(*st);
  std::lock_guard<std::mutex> lock(st->settings_lock);
  properties().get(st->settings, now, prop_id, value, pspec);
}

// ---- streaming thread ----------------------------------------------------

// What the chain returns for a frame the session took (or refused).
static GstFlowReturn flow_of(GstTorchInfer* self, const SubmitResult& r) {
  StreamSession& session = self->state->session;
  switch (r.status) {
    case SubmitStatus::kFlushing:
      return GST_FLOW_FLUSHING;
    case SubmitStatus::kMapFailed:
      post_error(GST_ELEMENT(self), ErrorKind::kRuntime,
                 "Could not read a video frame (buffer too small for its caps).");
      return GST_FLOW_ERROR;
    case SubmitStatus::kPrepareFailed:
      post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Could not prepare a frame: " + r.error);
      return GST_FLOW_ERROR;
    default:
      // Queued, skipped, dropped or stopped: whatever the output last met.
      return static_cast<GstFlowReturn>(session.output_code());
  }
}

// The labels of the detection model whose full-frame result `buf` carries
// (the regions' labels come from it); empty if there is none or its sidecar
// has no labels.
static std::vector<std::string> detector_labels(GstBuffer* buf, std::string* model) {
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    const auto* tm = reinterpret_cast<const GstTorchTensorMeta*>(m);
    if (tm->roi_id >= 0 || !tm->model) continue;
    try {
      const ModelConfig c = resolve_model_config(tm->model, "", {});
      if (c.task != Task::kDetection) continue;
      *model = tm->model;
      return c.labels;
    } catch (const std::exception&) {
      continue;  // its element found its configuration another way
    }
  }
  return {};
}

// object-class names region labels, which the detector upstream gives: a
// name its labels lack (a typo) never matches, so its objects would pass
// unclassified without a word. Checked once per run, on the first frame
// carrying a full-frame tensor meta.
static void check_object_class(GstTorchInfer* self, GstBuffer* buf) {
  State* st = self->state;
  if (!gst_buffer_get_torch_tensor_meta(buf)) return;
  st->object_class_checked = true;
  std::string model;
  const std::vector<std::string> labels = detector_labels(buf, &model);
  if (labels.empty()) return;
  std::string all;
  for (const auto& l : labels) all += (all.empty() ? "" : ", ") + l;
  for (const std::string& c : parse_class_list(st->run.object_class))
    if (std::find(labels.begin(), labels.end(), c) == labels.end())
      GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                          ("object-class '%s' is not a label of '%s', which found the regions: "
                           "no region will match it.",
                           c.c_str(), model.c_str()),
                          ("its labels: %s", all.c_str()));
}

static GstFlowReturn gst_torchinfer_chain(GstPad*, GstObject* parent, GstBuffer* buf) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  if (!st->have_info || !st->session.batcher()) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Received video before the format was negotiated."),
                      (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const std::vector<RegionOfInterest>* regions = nullptr;
  if (st->run.inference_region == REGION_ROI_LIST) {
    read_regions(buf, &st->regions);
    regions = &st->regions;
  }
  if (!st->object_class_checked) check_object_class(self, buf);
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  const SubmitResult r = st->session.submit_frame(
      own(GST_MINI_OBJECT(gst_buffer_ref(buf))), GST_VIDEO_INFO_WIDTH(&st->info),
      GST_VIDEO_INFO_HEIGHT(&st->info), pts,
      std::make_unique<BufferPixels>(&st->info, st->format, buf), regions);
  return flow_of(self, r);
}

static bool query_upstream_live(GstTorchInfer* self) {
  GstQuery* q = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(self->sinkpad, q)) gst_query_parse_latency(q, &live, nullptr, nullptr);
  gst_query_unref(q);
  return live;
}

static gboolean flush_stop(GstTorchInfer* self, GstEvent* event) {
  // Sticky events (stream-start, caps, tags) dropped from the queue by the
  // flush were never sent: store them on the source pad so that the next
  // push sends them first. Upstream sends a new segment.
  gst_pad_sticky_events_foreach(
      self->sinkpad,
      [](GstPad*, GstEvent** ev, gpointer srcpad) -> gboolean {
        if (GST_EVENT_TYPE(*ev) != GST_EVENT_EOS && GST_EVENT_TYPE(*ev) != GST_EVENT_SEGMENT)
          gst_pad_store_sticky_event(GST_PAD(srcpad), *ev);
        return TRUE;
      },
      self->srcpad);
  self->state->session.resume();
  const gboolean ret = gst_pad_push_event(self->srcpad, event);
  gst_pad_start_task(self->srcpad, gst_torchinfer_loop, self, nullptr);
  return ret;
}

// False (after posting an error) for a format torchinfer cannot read.
static bool set_caps(GstTorchInfer* self, GstCaps* caps) {
  State* st = self->state;
  GstVideoInfo info;
  PixelFormat pf;
  if (!video_info_from_caps(caps, &info, &pf)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("torchinfer cannot handle this video format."),
                      ("caps %" GST_PTR_FORMAT, caps));
    return false;
  }
  // Frames already queued keep the size they were prepared with; the
  // partial batch runs now rather than waiting for its timeout.
  st->session.submit_partial();
  st->info = info;
  st->format = pf;
  st->have_info = true;
  if (st->run.drop_policy == DROP_AUTO) st->session.set_skip_when_busy(query_upstream_live(self));
  return true;
}

static gboolean gst_torchinfer_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  auto* self = GST_TORCHINFER(parent);
  StreamSession& session = self->state->session;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START: {
      session.set_flushing();  // drops what was queued
      const gboolean ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_pause_task(self->srcpad);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP:
      return flush_stop(self, event);
    case GST_EVENT_STREAM_START: {
      // Several streams may come through one pad (funnel): counts and
      // object memory are kept per stream.
      const gchar* id = nullptr;
      gst_event_parse_stream_start(event, &id);
      session.begin_stream(id ? id : "");
      break;
    }
    case GST_EVENT_CAPS: {
      GstCaps* caps;
      gst_event_parse_caps(event, &caps);
      if (!set_caps(self, caps)) {
        gst_event_unref(event);
        return FALSE;
      }
      break;
    }
    case GST_EVENT_EOS:
    case GST_EVENT_SEGMENT_DONE:
    case GST_EVENT_GAP:
      session.submit_partial();
      break;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED(event)) return gst_pad_event_default(pad, parent, event);
  if (session.output_code() != GST_FLOW_OK && session.output_code() != GST_FLOW_EOS &&
      !session.flushing()) {
    // The output task stopped on a downstream error: nothing queued will
    // leave, so events (EOS above all) go straight on. After downstream's
    // EOS the task still runs and passes events on in order.
    return gst_pad_push_event(self->srcpad, event);
  }
  return session.push_event(own(GST_MINI_OBJECT(event)));
}

// A pad's stream lock for one scope (it is recursive: gst_pad_query may
// hold it already).
struct GstPadStreamLock {
  explicit GstPadStreamLock(GstPad* p) : pad(p) { GST_PAD_STREAM_LOCK(pad); }
  ~GstPadStreamLock() { GST_PAD_STREAM_UNLOCK(pad); }
  GstPadStreamLock(const GstPadStreamLock&) = delete;
  GstPadStreamLock& operator=(const GstPadStreamLock&) = delete;
  GstPad* pad;
};

static gboolean gst_torchinfer_sink_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  if (!GST_QUERY_IS_SERIALIZED(query)) return gst_pad_query_default(pad, parent, query);
  // GStreamer does not refuse queries on a deactivated pad: upstream (still
  // running while this element stops, since a bin stops its sinks first)
  // may query while stop() tears the session down. Under the stream lock,
  // which deactivation takes after flagging the pad, a pad not flushing
  // cannot be stopped until the query is done.
  GstPadStreamLock hold(pad);
  if (GST_PAD_IS_FLUSHING(pad)) return FALSE;
  // Serialized queries (allocation, drain) must see the frames before them
  // leave first.
  if (!st->session.drain()) return FALSE;
  if (!gst_pad_query_default(pad, parent, query)) return FALSE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION) {
    // Upstream's pool must cover the frames this element holds on top of
    // what downstream asked for, or a camera with few buffers stalls.
    const guint hold = static_cast<guint>(st->session.capacity());
    const guint n = gst_query_get_n_allocation_pools(query);
    for (guint i = 0; i < n; ++i) {
      GstBufferPool* pool = nullptr;
      guint size, min, max;
      gst_query_parse_nth_allocation_pool(query, i, &pool, &size, &min, &max);
      min += hold;
      if (max != 0 && max < min) max = min;
      gst_query_set_nth_allocation_pool(query, i, pool, size, min, max);
      if (pool) gst_object_unref(pool);
    }
    if (n == 0 && st->have_info)
      gst_query_add_allocation_pool(query, nullptr, GST_VIDEO_INFO_SIZE(&st->info), hold, 0);
  }
  return TRUE;
}

// ---- output thread -------------------------------------------------------

static void post_stats(GstTorchInfer* self, const StatsSnapshot& snap) {
  gst_element_post_message(
      GST_ELEMENT(self),
      gst_message_new_element(GST_OBJECT(self), stats_structure("torchinfer-stats", snap)));
}

static void stop_output(GstTorchInfer* self, GstFlowReturn ret) {
  if (ret == GST_FLOW_EOS) {
    // Downstream wants no more of this segment (identity eos-after, a muxer
    // pad that ended): as queue does, the task keeps running, frames
    // already queued are let go and the events behind them (the EOS that ends
    // the pipeline, a new segment) still go out in order.
    self->state->session.stop_output(ret, false);
    return;
  }
  // Nothing queued can leave now; unblock the streaming thread.
  self->state->session.stop_output(ret, ret != GST_FLOW_FLUSHING);
  gst_pad_pause_task(self->srcpad);
}

static void push_event_out(GstTorchInfer* self, GstEvent* ev) {
  State* st = self->state;
  // The last figures of a finite stream, whatever the interval.
  if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS && st->run.stats_interval_ms > 0)
    post_stats(self, st->session.snapshot(false));
  if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS && st->regions_not_classified > 0)
    GST_WARNING_OBJECT(self, "%" G_GUINT64_FORMAT " regions inferred without a classification",
                       st->regions_not_classified);
  gst_pad_push_event(self->srcpad, ev);
}

// roi-list with a detector: the regions get its tensors (roi_id) but no
// classification, which is rarely what was meant (a detector given where a
// classifier belongs). Counted; warned on the first such frame.
static void warn_not_classified(GstTorchInfer* self, std::size_t regions) {
  State* st = self->state;
  if (st->regions_not_classified == 0)
    GST_ELEMENT_WARNING(
        self, RESOURCE, SETTINGS,
        ("Model '%s' is not a classifier: inference-region=roi-list attaches no "
         "classification to the regions it infers (only their tensor metas).",
         st->run.model.c_str()),
        ("%" G_GUINT64_FORMAT " regions on this frame; give a classification model (task "
         "\"classification\" in its sidecar), or task=raw to ask for tensors "
         "only",
         static_cast<guint64>(regions)));
  st->regions_not_classified += regions;
}

// Attaches the frame's results (or the latest reused ones); false after
// posting an error.
static bool attach(GstTorchInfer* self, GstBuffer* buf, const StreamOutput& out) {
  State* st = self->state;
  if (!out.results) return true;
  try {
    std::size_t not_classified = 0;
    const bool scores =
        out.results->region_mode
            ? attach_region_results(buf, *out.results, {st->run.model_instance_id, st->name},
                                    &not_classified)
            : attach_results(buf, *out.results, out.inferred, st->run.model_instance_id);
    if (not_classified > 0) warn_not_classified(self, not_classified);
    if (!scores && !st->warned_not_classifier) {
      st->warned_not_classifier = true;
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                          ("Model output is neither a vector of class scores nor (task anomaly) "
                           "an anomaly map [N,1,h,w] or score [N]; no labels attached."),
                          ("set task=raw or task=detection for this model"));
    }
    return true;
  } catch (const std::exception& e) {
    post_error(GST_ELEMENT(self), ErrorKind::kRuntime,
               std::string("Inference failed: ") + e.what());
    return false;
  }
}

// False for a freshly inferred result with NaN/infinite outputs; warns on
// the first of each burst.
static bool check_valid(GstTorchInfer* self, const FrameInference& rec) {
  State* st = self->state;
  const bool valid = result_valid(rec);
  if (st->invalid_report.record(!valid))
    GST_ELEMENT_WARNING(self, STREAM, FAILED,
                        ("%s", invalid_output_warning(st->invalid_report).c_str()),
                        ("model '%s'", st->run.model.c_str()));
  return valid;
}

// A freshly inferred frame whose GRAY16_LE samples went past input-bits
// (clamped to white; counted by the session): a warning when
// SaturationReport says so, with the setting that would have held them.
static void check_saturation(GstTorchInfer* self, const FrameInference& rec) {
  State* st = self->state;
  if (!st->saturation_report.record(rec.saturation, std::chrono::steady_clock::now())) return;
  GST_ELEMENT_WARNING(
      self, STREAM, FORMAT,
      ("%s", saturation_warning(st->run.input_bits, rec.saturation, st->saturation_report).c_str()),
      ("input-bits says how many low bits of a GRAY16_LE sample are significant: 12 for a "
       "Mono12 camera, 16 for Mono16"));
}

// Another sharer's reload reaches this element with the first frame the new
// model inferred for it.
static void notice_reload(GstTorchInfer* self, const FrameInference& rec) {
  for (const SlotResult& slot : rec.slots)
    if (slot.result.model) {
      if (slot.result.model->generation > self->state->generation.load())
        adopt_model(self, slot.result.model, true);
      return;
    }
}

static void gst_torchinfer_loop(gpointer user_data) {
  auto* self = GST_TORCHINFER(user_data);
  StreamSession& session = self->state->session;
  std::optional<StreamOutput> out = session.pop();
  if (!out) {
    gst_pad_pause_task(self->srcpad);
    return;
  }
  if (out->is_event) {
    auto* ev = GST_EVENT(out->obj.release());
    const bool restarts =
        GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT || GST_EVENT_TYPE(ev) == GST_EVENT_STREAM_START;
    // Before the push: once downstream has the new segment, a frame behind
    // it must not be refused.
    if (restarts) session.accept_again(GST_FLOW_EOS);
    if (self->state->not_pushed && (restarts || GST_EVENT_TYPE(ev) == GST_EVENT_EOS)) {
      // Downstream asked for them to stop: not a loss to warn about, but
      // frames-out falls short of frames-in by this many.
      GST_INFO_OBJECT(self, "%" G_GUINT64_FORMAT " frames not pushed after downstream's EOS",
                      self->state->not_pushed);
      self->state->not_pushed = 0;
    }
    push_event_out(self, ev);
    return;
  }
  if (session.output_code() == GST_FLOW_EOS) {
    ++self->state->not_pushed;
    session.discard(*out);
    return;
  }
  if (!out->error.empty()) {
    post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Inference failed: " + out->error);
    session.discard(*out);
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  GstBuffer* buf = gst_buffer_make_writable(GST_BUFFER(out->obj.release()));
  if (!attach(self, buf, *out)) {
    gst_buffer_unref(buf);
    session.discard(*out);
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  if (out->inferred) notice_reload(self, *out->results);
  const bool valid = !out->inferred || check_valid(self, *out->results);
  if (out->inferred) check_saturation(self, *out->results);
  if (std::optional<StatsSnapshot> snap = session.finish(*out, valid)) post_stats(self, *snap);
  const GstFlowReturn ret = gst_pad_push(self->srcpad, buf);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "downstream returned %s, pausing", gst_flow_get_name(ret));
    stop_output(self, ret);
  }
}

static gboolean gst_torchinfer_src_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  auto* self = GST_TORCHINFER(parent);
  if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return gst_pad_query_default(pad, parent, query);
  if (!gst_pad_peer_query(self->sinkpad, query)) return FALSE;
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  // A frame waits for its batch to fill (batch-timeout at most) and for
  // the forward() of its batch; it may also wait for the batch before it.
  const GstClockTime ours = self->state->latency_ns.load();
  min += ours;
  if (GST_CLOCK_TIME_IS_VALID(max)) max += 2 * ours;
  gst_query_set_latency(query, live, min, max);
  return TRUE;
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
  {
    std::lock_guard<std::mutex> lock(self->state->reload_lock);
    if (self->state->reload_thread.joinable()) self->state->reload_thread.join();
  }
  delete self->state;
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
