// torchinfer's streaming thread: frames into the session (chain), the
// serialized events and queries that must keep their place among them, and
// the flushes that cut across.
#include <gst/video/video.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "buffer-pixels.h"
#include "element-errors.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "torchinfer-element.h"
#include "torchinfer-results.h"

#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;

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
static void check_object_class(GstTorchInfer* self, InputState& in, GstBuffer* buf) {
  State* st = self->state;
  if (!gst_buffer_get_torch_tensor_meta(buf)) return;
  in.object_class_checked = true;
  std::string model;
  const std::vector<std::string> labels = detector_labels(buf, &model);
  if (labels.empty()) return;
  std::string all;
  for (const auto& l : labels) all += (all.empty() ? "" : ", ") + l;
  const std::string& sidecar = st->object_classes_sidecar;
  for (const std::string& c : st->object_classes) {
    if (std::find(labels.begin(), labels.end(), c) != labels.end()) continue;
    if (!sidecar.empty())  // the user never typed it: name the file to fix
      GST_ELEMENT_WARNING(
          self, RESOURCE, SETTINGS,
          ("object_classes '%s' of the sidecar '%s' is not a label of '%s', which "
           "found the regions: no region will match it.",
           c.c_str(), sidecar.c_str(), model.c_str()),
          ("its labels: %s; fix the sidecar's object_classes or set object-class", all.c_str()));
    else
      GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                          ("object-class '%s' is not a label of '%s', which found the regions: "
                           "no region will match it.",
                           c.c_str(), model.c_str()),
                          ("its labels: %s", all.c_str()));
  }
}

// inference-region=tiles: the frame's tiles in in.regions; false after
// posting the error for a grid that cannot be made.
static bool cut_tiles(GstTorchInfer* self, InputState& in) {
  State* st = self->state;
  try {
    tile_regions(st->run, st->session.batcher()->model()->config, GST_VIDEO_INFO_WIDTH(&in.info),
                 GST_VIDEO_INFO_HEIGHT(&in.info), &in.tiles, &in.regions);
    return true;
  } catch (const std::exception& e) {
    post_error(GST_ELEMENT(self), ErrorKind::kConfigInvalid,
               std::string("inference-region=tiles: ") + e.what());
    return false;
  }
}

GstFlowReturn gst_torchinfer_chain(GstPad*, GstObject* parent, GstBuffer* buf) {
  auto* self = GST_TORCHINFER(parent);
  State* st = self->state;
  const auto in = st->input.borrow();
  if (!in->have_info || !st->session.batcher()) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Received video before the format was negotiated."),
                      (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const std::vector<RegionOfInterest>* regions = nullptr;
  if (st->run.inference_region == REGION_ROI_LIST) {
    read_regions(buf, &in->regions);
    regions = &in->regions;
  } else if (st->run.inference_region == REGION_TILES) {
    if (!cut_tiles(self, *in)) {
      gst_buffer_unref(buf);
      return GST_FLOW_ERROR;
    }
    regions = &in->regions;
  }
  if (!in->object_class_checked) check_object_class(self, *in, buf);
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  const SubmitResult r = st->session.submit_frame(
      own(GST_MINI_OBJECT(gst_buffer_ref(buf))), GST_VIDEO_INFO_WIDTH(&in->info),
      GST_VIDEO_INFO_HEIGHT(&in->info), pts,
      std::make_unique<BufferPixels>(&in->info, in->format, buf), regions);
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
  const auto in = st->input.borrow();
  in->info = info;
  in->format = pf;
  in->have_info = true;
  if (st->run.drop_policy == DROP_AUTO) st->session.set_skip_when_busy(query_upstream_live(self));
  return true;
}

gboolean gst_torchinfer_sink_event(GstPad* pad, GstObject* parent, GstEvent* event) {
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

gboolean gst_torchinfer_sink_query(GstPad* pad, GstObject* parent, GstQuery* query) {
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
    const auto in = st->input.borrow();
    if (n == 0 && in->have_info)
      gst_query_add_allocation_pool(query, nullptr, GST_VIDEO_INFO_SIZE(&in->info), hold, 0);
  }
  return TRUE;
}
