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

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "batching/batcher.h"
#include "batching/in_order_queue.h"
#include "model/model_registry.h"
#include "common/error.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "preprocess/preprocess.h"
#include "torchinfer-load.h"
#include "torchinfer-results.h"
#include "torchinfer-settings.h"

GST_DEBUG_CATEGORY(gst_torchinfer_debug);
#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;
using Clock = std::chrono::steady_clock;

#define TORCHINFER_FORMATS                                                                     \
  "{ YUY2, UYVY, NV12, NV21, I420, YV12, RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, " \
  "ABGR, GRAY8 }"

namespace {

// One reference to a buffer or event, released when dropped (flush, stop).
class MiniObjectRef {
 public:
  MiniObjectRef() = default;
  explicit MiniObjectRef(GstMiniObject* o) : p_(o) {}
  MiniObjectRef(MiniObjectRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  MiniObjectRef& operator=(MiniObjectRef&& o) noexcept {
    if (p_) gst_mini_object_unref(p_);
    p_ = std::exchange(o.p_, nullptr);
    return *this;
  }
  ~MiniObjectRef() {
    if (p_) gst_mini_object_unref(p_);
  }
  GstMiniObject* release() { return std::exchange(p_, nullptr); }

 private:
  GstMiniObject* p_ = nullptr;
};

struct Item {
  MiniObjectRef obj;
  bool is_event = false;
  bool infer = false;  // went to the model; its result arrives in rec.result
  FrameRecord rec;
  Clock::time_point in_time;
};

// Shared with the batch callbacks, which may outlive the element's run.
struct Output {
  InOrderQueue<Item> queue{8};
};

struct State {
  std::mutex settings_lock;  // guards settings
  Settings settings;
  std::mutex stats_lock;  // guards stats, stream_stats
  Stats stats;
  StreamStats stream_stats;

  // From start() to stop(); read by the streaming and output threads.
  Settings run;
  std::shared_ptr<Batcher> batcher;
  std::atomic<guint64> latency_ns{0};
  const std::shared_ptr<Output> out = std::make_shared<Output>();
  std::atomic<bool> flushing{true};
  std::atomic<int> flow{GST_FLOW_FLUSHING};  // last downstream GstFlowReturn

  // Streaming thread only.
  GstVideoInfo info;
  bool have_info = false;
  bool skip_when_busy = false;
  std::shared_ptr<const LoadedModel> pre_model;
  std::unique_ptr<Preprocessor> pre;
  guint64 frame_counter = 0;

  // Output thread only.
  std::optional<FrameRecord> last;
  bool warned_not_classifier = false;
  BurstReport invalid_report;  // NaN/infinite results, warned once per burst
  Clock::time_point last_stats_post{};

  // Guards reload_thread and, for threads other than the streaming one,
  // batcher (set in start, reset in stop).
  std::mutex reload_lock;
  std::thread reload_thread;
  std::atomic<int> generation{1};
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

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(TORCHINFER_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(TORCHINFER_FORMATS)));

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
}

static bool gst_torchinfer_start(GstTorchInfer* self) {
  State* st = self->state;
  Settings s;
  {
    std::lock_guard<std::mutex> lock(st->settings_lock);
    s = st->settings;
  }
  if (s.model.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
                      ("No model file set: give torchinfer a model=<file.pt>."), (nullptr));
    return false;
  }
  try {
    const ModelConfig config = resolve_model_config(s.model, s.model_config, s.overrides());
    auto make = [&] {
      auto model = load_for_element(GST_ELEMENT(self), s, config, 1);
      BatcherOptions bo;
      bo.batch_size = s.batch_size;
      bo.timeout = std::chrono::microseconds(s.batch_timeout_us);
      return std::make_shared<Batcher>(model, bo);
    };
    std::shared_ptr<Batcher> batcher =
        s.model_instance_id.empty()
            ? make()
            : ModelRegistry::instance().acquire(s.model_instance_id, sharing_key(s, config), make);
    std::shared_ptr<const LoadedModel> model = batcher->model();
    record_load_stats(st, *model);
    {
      std::lock_guard<std::mutex> lock(st->stats_lock);
      st->stats.frames = 0;
      st->stats.last_inference_ms = 0;
      st->stream_stats = StreamStats{};
    }
    st->run = s;
    st->latency_ns = our_latency_ns(s, *model);
    // Enough room for every frame the batch buffers can hold, the frames
    // that pass between inferred ones, and a few events.
    st->out->queue.set_capacity(static_cast<std::size_t>(batcher->options().buffers) *
                                    s.batch_size * s.inference_interval +
                                8);
    st->have_info = false;
    st->skip_when_busy = s.drop_policy == DROP_SKIP;
    st->pre.reset();
    st->pre_model.reset();
    st->frame_counter = 0;
    st->last.reset();
    st->warned_not_classifier = false;
    st->invalid_report = BurstReport{};
    st->last_stats_post = Clock::now();
    std::lock_guard<std::mutex> lock(st->reload_lock);
    st->batcher = std::move(batcher);
    st->generation = 1;
    return true;
  } catch (const std::exception& e) {
    post_load_error(GST_ELEMENT(self), e, s.model);
  } catch (...) {
    GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("Model '%s' could not be loaded.", s.model.c_str()),
                      (nullptr));
  }
  return false;
}

static void gst_torchinfer_stop(GstTorchInfer* self) {
  State* st = self->state;
  std::shared_ptr<Batcher> batcher;
  {
    std::lock_guard<std::mutex> lock(st->reload_lock);
    if (st->reload_thread.joinable()) st->reload_thread.join();
    batcher = std::move(st->batcher);
  }
  st->out->queue.set_flushing(true);
  // The last element holding a batcher destroys it here, which waits for
  // the batch in flight (one forward()).
  batcher.reset();
  st->pre.reset();
  st->pre_model.reset();
  st->last.reset();
}

// Loads `path` off the streaming path and switches the batcher to it.
static void reload_model(GstTorchInfer* self, std::string path, std::shared_ptr<Batcher> batcher) {
  State* st = self->state;
  Settings s = st->run;
  s.model = path;
  s.model_config.clear();  // the new model's own sidecar
  const int generation = ++st->generation;
  try {
    const ModelConfig config = resolve_model_config(s.model, s.model_config, s.overrides());
    auto model = load_for_element(GST_ELEMENT(self), s, config, generation);
    batcher->replace_model(model);
    record_load_stats(st, *model);
    st->latency_ns = our_latency_ns(s, *model);
    {
      std::lock_guard<std::mutex> lock(st->settings_lock);
      st->settings.model = path;
    }
    const EngineInfo& info = model->engine->info();
    gst_element_post_message(
        GST_ELEMENT(self),
        gst_message_new_element(
            GST_OBJECT(self),
            gst_structure_new("torchinfer-model-reloaded", "model", G_TYPE_STRING, path.c_str(),
                              "generation", G_TYPE_INT, generation, "load-time", G_TYPE_DOUBLE,
                              info.load_ms + info.optimize_ms + info.warmup_ms, nullptr)));
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
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
  if (!st->batcher) {  // stopped meanwhile: the next start loads `model`
    std::lock_guard<std::mutex> settings(st->settings_lock);
    st->settings.model = path;
    return;
  }
  // One reload at a time; a second request waits for the first.
  if (st->reload_thread.joinable()) st->reload_thread.join();
  st->reload_thread = std::thread(reload_model, self, std::string(path), st->batcher);
}

// ---- properties ----------------------------------------------------------

static void gst_torchinfer_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHINFER(object);
  GST_OBJECT_LOCK(self);
  const bool running =
      GST_STATE(self) >= GST_STATE_PAUSED || GST_STATE_PENDING(self) >= GST_STATE_PAUSED;
  GST_OBJECT_UNLOCK(self);
  if (running && prop_id == PROP_MODEL) {
    start_reload(self, g_value_get_string(value));
    return;
  }
  std::lock_guard<std::mutex> lock(self->state->settings_lock);
  set_property(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchinfer_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHINFER(object);
  State* st = self->state;
  switch (prop_id) {
    case PROP_DROPPED:
    case PROP_FPS:
    case PROP_LATENCY_P50:
    case PROP_LATENCY_P99:
    case PROP_STATS: {
      StatsSnapshot snap;
      {
        std::lock_guard<std::mutex> lock(st->stats_lock);
        snap = st->stream_stats.snapshot(Clock::now(), false);
      }
      if (prop_id == PROP_DROPPED) g_value_set_uint64(value, snap.dropped);
      if (prop_id == PROP_FPS) g_value_set_double(value, snap.fps);
      if (prop_id == PROP_LATENCY_P50) g_value_set_double(value, snap.total.p50);
      if (prop_id == PROP_LATENCY_P99) g_value_set_double(value, snap.total.p99);
      if (prop_id == PROP_STATS)
        g_value_take_boxed(value, stats_structure("torchinfer-stats", snap));
      return;
    }
    default:
      break;
  }
  std::scoped_lock lock(st->settings_lock, st->stats_lock);
  get_property(st->settings, st->stats, prop_id, value, pspec);
}

// ---- streaming thread ----------------------------------------------------

static GstFlowReturn current_flow(State* st) {
  return static_cast<GstFlowReturn>(st->flow.load());
}

static void mark_not_inferred(State* st, std::uint64_t seq) {
  st->out->queue.complete(seq, [](Item& it) { it.infer = false; });
}

static GstFlowReturn gst_torchinfer_chain(GstPad*, GstObject* parent, GstBuffer* buf) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  GstFlowReturn flow = current_flow(st);
  if (flow != GST_FLOW_OK) {
    gst_buffer_unref(buf);
    return flow;
  }
  if (!st->have_info || !st->batcher) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Received video before the format was negotiated."),
                      (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  {
    std::lock_guard<std::mutex> lock(st->stats_lock);
    st->stream_stats.frame_in();
  }
  const bool infer = st->frame_counter++ % st->run.inference_interval == 0;
  const bool skip_when_busy = st->skip_when_busy;

  Item item;
  item.obj = MiniObjectRef(GST_MINI_OBJECT(gst_buffer_ref(buf)));  // the queue's reference
  MiniObjectRef ours(GST_MINI_OBJECT(buf));                        // kept while preprocessing
  item.infer = infer;
  item.in_time = Clock::now();
  item.rec.frame_width = GST_VIDEO_INFO_WIDTH(&st->info);
  item.rec.frame_height = GST_VIDEO_INFO_HEIGHT(&st->info);
  item.rec.pts = GST_BUFFER_PTS(buf);
  const std::optional<std::uint64_t> seq =
      st->out->queue.push(std::move(item), !infer, !skip_when_busy);
  if (!seq) {
    if (st->flushing) return GST_FLOW_FLUSHING;
    flow = current_flow(st);
    if (flow != GST_FLOW_OK) return flow;
    // Live and the queue is full: this frame leaves the stream.
    std::lock_guard<std::mutex> lock(st->stats_lock);
    st->stream_stats.frame_dropped();
    return GST_FLOW_OK;
  }
  if (!infer) {
    std::lock_guard<std::mutex> lock(st->stats_lock);
    st->stream_stats.frame_skipped();
    return current_flow(st);
  }

  Batcher::Slot slot = st->batcher->acquire(!skip_when_busy, st->flushing);
  if (!slot) {
    if (st->flushing) return GST_FLOW_FLUSHING;
    mark_not_inferred(st, *seq);
    std::lock_guard<std::mutex> lock(st->stats_lock);
    st->stream_stats.frame_dropped();
    return current_flow(st);
  }

  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &st->info, buf, GST_MAP_READ)) {
    st->batcher->commit(slot, nullptr);
    mark_not_inferred(st, *seq);
    GST_ELEMENT_ERROR(self, STREAM, FAILED,
                      ("Could not read a video frame (buffer too small for its caps)."), (nullptr));
    return GST_FLOW_ERROR;
  }
  try {
    if (slot.model != st->pre_model) {
      st->pre = std::make_unique<Preprocessor>(preprocess_options(st->run, slot.model->config));
      st->pre_model = slot.model;
    }
    const auto t0 = Clock::now();
    const FrameTransform tf =
        slot.model->config.input_uint8
            ? st->pre->run(frame_view(frame), static_cast<std::uint8_t*>(slot.data))
            : st->pre->run(frame_view(frame), static_cast<float*>(slot.data));
    const double pre_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    gst_video_frame_unmap(&frame);
    std::shared_ptr<Output> out = st->out;
    const std::uint64_t s = *seq;
    st->batcher->commit(slot, [out, s, tf, pre_ms](FrameResult&& r) {
      out->queue.complete(s, [&](Item& it) {
        it.rec.result = std::move(r);
        it.rec.transform = tf;
        it.rec.preprocess_ms = pre_ms;
      });
    });
  } catch (const std::exception& e) {
    gst_video_frame_unmap(&frame);
    st->batcher->commit(slot, nullptr);
    mark_not_inferred(st, *seq);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not prepare a frame: %s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  }
  return current_flow(st);
}

static bool query_upstream_live(GstTorchInfer* self) {
  GstQuery* q = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(self->sinkpad, q)) gst_query_parse_latency(q, &live, nullptr, nullptr);
  gst_query_unref(q);
  return live;
}

static gboolean gst_torchinfer_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START: {
      st->flushing = true;
      st->flow = GST_FLOW_FLUSHING;
      if (st->batcher) st->batcher->wake();
      st->out->queue.set_flushing(true);  // drops what was queued
      const gboolean ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_pause_task(self->srcpad);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP: {
      // Sticky events (stream-start, caps, tags) dropped from the queue by
      // the flush were never sent: store them on the source pad so that the
      // next push sends them first. Upstream sends a new segment.
      gst_pad_sticky_events_foreach(
          self->sinkpad,
          [](GstPad*, GstEvent** ev, gpointer srcpad) -> gboolean {
            if (GST_EVENT_TYPE(*ev) != GST_EVENT_EOS && GST_EVENT_TYPE(*ev) != GST_EVENT_SEGMENT)
              gst_pad_store_sticky_event(GST_PAD(srcpad), *ev);
            return TRUE;
          },
          self->srcpad);
      st->out->queue.set_flushing(false);
      st->last.reset();
      st->flushing = false;
      st->flow = GST_FLOW_OK;
      const gboolean ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_start_task(self->srcpad, gst_torchinfer_loop, self, nullptr);
      return ret;
    }
    case GST_EVENT_CAPS: {
      GstCaps* caps;
      gst_event_parse_caps(event, &caps);
      GstVideoInfo info;
      PixelFormat pf;
      if (!gst_video_info_from_caps(&info, caps) ||
          !to_pixel_format(GST_VIDEO_INFO_FORMAT(&info), &pf)) {
        GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("torchinfer cannot handle this video format."),
                          ("caps %" GST_PTR_FORMAT, caps));
        gst_event_unref(event);
        return FALSE;
      }
      // Frames already queued keep the size they were prepared with; the
      // partial batch runs now rather than waiting for its timeout.
      if (st->batcher) st->batcher->submit_partial();
      st->info = info;
      st->have_info = true;
      if (st->run.drop_policy == DROP_AUTO) st->skip_when_busy = query_upstream_live(self);
      break;
    }
    case GST_EVENT_EOS:
    case GST_EVENT_SEGMENT_DONE:
    case GST_EVENT_GAP:
      if (st->batcher) st->batcher->submit_partial();
      break;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED(event)) return gst_pad_event_default(pad, parent, event);
  const GstFlowReturn flow = current_flow(st);
  if (flow != GST_FLOW_OK && !st->flushing) {
    // The output task stopped on a downstream error or EOS: nothing queued
    // will leave, so events (EOS above all) go straight on.
    return gst_pad_push_event(self->srcpad, event);
  }
  Item item;
  item.obj = MiniObjectRef(GST_MINI_OBJECT(event));
  item.is_event = true;
  return st->out->queue.push(std::move(item), true, true).has_value();
}

static gboolean gst_torchinfer_sink_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  if (!GST_QUERY_IS_SERIALIZED(query)) return gst_pad_query_default(pad, parent, query);
  // Serialized queries (allocation, drain) must see the frames before them
  // leave first.
  if (st->batcher) st->batcher->submit_partial();
  if (!st->out->queue.wait_empty()) return FALSE;
  if (!gst_pad_query_default(pad, parent, query)) return FALSE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION) {
    // Upstream's pool must cover the frames this element holds on top of
    // what downstream asked for, or a camera with few buffers stalls.
    const guint hold = static_cast<guint>(st->out->queue.capacity());
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
  State* st = self->state;
  st->flow = ret;
  // Nothing queued can leave now; unblock the streaming thread.
  if (ret != GST_FLOW_FLUSHING) st->out->queue.set_flushing(true);
  gst_pad_pause_task(self->srcpad);
}

static void gst_torchinfer_loop(gpointer user_data) {
  auto* self = GST_TORCHINFER(user_data);
  State* st = self->state;
  std::optional<Item> item = st->out->queue.pop();
  if (!item) {
    gst_pad_pause_task(self->srcpad);
    return;
  }
  if (item->is_event) {
    GstEvent* ev = GST_EVENT(item->obj.release());
    if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS && st->run.stats_interval_ms > 0) {
      // The last figures of a finite stream, whatever the interval.
      StatsSnapshot snap;
      {
        std::lock_guard<std::mutex> lock(st->stats_lock);
        snap = st->stream_stats.snapshot(Clock::now(), false);
      }
      post_stats(self, snap);
    }
    gst_pad_push_event(self->srcpad, ev);
    return;
  }
  FrameRecord& rec = item->rec;
  if (item->infer && !rec.result.error.empty()) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Inference failed: %s", rec.result.error.c_str()),
                      (nullptr));
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  GstBuffer* buf = gst_buffer_make_writable(GST_BUFFER(item->obj.release()));
  const bool inferred = item->infer && rec.result.output;
  bool valid = true;
  try {
    bool scores_ok = true;
    if (inferred) {
      scores_ok = attach_results(buf, rec, true, st->run.model_instance_id);
      st->last = rec;
      valid = result_valid(rec);
      if (st->invalid_report.record(!valid))
        GST_ELEMENT_WARNING(self, STREAM, FAILED,
                            ("%s", invalid_output_warning(st->invalid_report).c_str()),
                            ("model '%s'", st->run.model.c_str()));
    } else if (st->last && st->last->frame_width == rec.frame_width &&
               st->last->frame_height == rec.frame_height) {
      scores_ok = attach_results(buf, *st->last, false, st->run.model_instance_id);
    }
    if (!scores_ok && !st->warned_not_classifier) {
      st->warned_not_classifier = true;
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                          ("Model output is not a vector of class scores; no labels attached."),
                          ("set task=raw or task=detection for this model"));
    }
  } catch (const std::exception& e) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Inference failed: %s", e.what()), (nullptr));
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  const auto now = Clock::now();
  std::optional<StatsSnapshot> to_post;
  {
    std::lock_guard<std::mutex> lock(st->stats_lock);
    StreamStats& ss = st->stream_stats;
    if (item->infer && rec.result.output) {
      ss.inferred(rec.result.batch_fill, rec.result.queue_ms, rec.preprocess_ms,
                  rec.result.inference_ms);
      st->stats.frames++;
      st->stats.last_inference_ms = rec.result.inference_ms;
      if (!valid) ss.frame_invalid();
    }
    ss.frame_out(now);
    ss.latency(std::chrono::duration<double, std::milli>(now - item->in_time).count());
    const guint interval = st->run.stats_interval_ms;
    if (interval > 0 && now - st->last_stats_post >= std::chrono::milliseconds(interval)) {
      st->last_stats_post = now;
      to_post = ss.snapshot(now, true);
    }
  }
  if (to_post) post_stats(self, *to_post);
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

static void set_flushing(State* st) {
  st->flushing = true;
  st->flow = GST_FLOW_FLUSHING;
  if (st->batcher) st->batcher->wake();
  st->out->queue.set_flushing(true);
}

static gboolean gst_torchinfer_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                                 gboolean active) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  if (active) {
    st->out->queue.set_flushing(false);
    st->flushing = false;
    st->flow = GST_FLOW_OK;
    return gst_pad_start_task(pad, gst_torchinfer_loop, self, nullptr);
  }
  set_flushing(st);
  return gst_pad_stop_task(pad);
}

static gboolean gst_torchinfer_sink_activate_mode(GstPad*, GstObject* parent, GstPadMode mode,
                                                  gboolean active) {
  auto* self = GST_TORCHINFER(parent);
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  // Unblocks a chain() waiting for a batch buffer or queue space before the
  // pad takes its stream lock.
  if (!active) set_flushing(self->state);
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
  install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "PyTorch inference", "Filter/Analyzer/Video",
                                        "Runs a TorchScript model on raw video frames (YUY2, RGB, "
                                        "...) in batches and attaches the results as metadata",
                                        "torchinfer developers");
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_torchinfer_change_state);

  GST_DEBUG_CATEGORY_INIT(gst_torchinfer_debug, "torchinfer", 0, "TorchScript inference on video");
}

static void gst_torchinfer_init(GstTorchInfer* self) {
  self->state = new State();
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
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

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_torchinfer_src_query));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_torchinfer_src_activate_mode));
  GST_PAD_SET_PROXY_CAPS(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
}
