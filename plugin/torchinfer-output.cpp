// torchinfer's output thread, the source pad's task: frames and events
// leave in their order, frames with their results attached, and the
// warnings about what came out (not a classifier, NaN, saturation).
#include <gst/video/video.h>

#include <chrono>
#include <optional>
#include <string>

#include "element-errors.h"
#include "torchinfer-element.h"
#include "torchinfer-results.h"

#define GST_CAT_DEFAULT gst_torchinfer_debug

using namespace torchinfer;
using namespace torchinfer::gst;

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

static void push_event_out(GstTorchInfer* self, OutputState& out, GstEvent* ev) {
  State* st = self->state;
  // The last figures of a finite stream, whatever the interval.
  if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS && st->run.stats_interval_ms > 0)
    post_stats(self, st->session.snapshot(false));
  if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS && out.regions_not_classified > 0)
    GST_WARNING_OBJECT(self, "%" G_GUINT64_FORMAT " regions inferred without a classification",
                       out.regions_not_classified);
  gst_pad_push_event(self->srcpad, ev);
}

// roi-list with a detector: the regions get its tensors (roi_id) but no
// classification, which is rarely what was meant (a detector given where a
// classifier belongs). Counted; warned on the first such frame.
static void warn_not_classified(GstTorchInfer* self, OutputState& out, std::size_t regions) {
  State* st = self->state;
  if (out.regions_not_classified == 0)
    GST_ELEMENT_WARNING(
        self, RESOURCE, SETTINGS,
        ("Model '%s' is not a classifier: inference-region=roi-list attaches no "
         "classification to the regions it infers (only their tensor metas).",
         st->run.model.c_str()),
        ("%" G_GUINT64_FORMAT " regions on this frame; give a classification model (task "
         "\"classification\" in its sidecar), or task=raw to ask for tensors "
         "only",
         static_cast<guint64>(regions)));
  out.regions_not_classified += regions;
}

// Attaches the frame's results (or the latest reused ones); false after
// posting an error.
static bool attach(GstTorchInfer* self, OutputState& state, GstBuffer* buf,
                   const StreamOutput& out) {
  State* st = self->state;
  if (!out.results) return true;
  try {
    std::size_t not_classified = 0;
    if (st->run.inference_region == REGION_TILES) {
      attach_tile_results(buf, *out.results,
                          out.inferred ? std::nullopt : std::optional<SkipReason>(out.skip),
                          st->run.model_instance_id);
      return true;
    }
    const bool scores =
        out.results->region_mode
            ? attach_region_results(buf, *out.results, {st->run.model_instance_id, st->name},
                                    &not_classified)
            : attach_results(buf, *out.results, out.inferred, st->run.model_instance_id, out.skip);
    if (not_classified > 0) warn_not_classified(self, state, not_classified);
    if (!scores && !state.warned_not_classifier) {
      state.warned_not_classifier = true;
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
static bool check_valid(GstTorchInfer* self, OutputState& out, const FrameInference& rec) {
  State* st = self->state;
  const bool valid = result_valid(rec);
  if (out.invalid_report.record(!valid))
    GST_ELEMENT_WARNING(self, STREAM, FAILED,
                        ("%s", invalid_output_warning(out.invalid_report).c_str()),
                        ("model '%s'", st->run.model.c_str()));
  return valid;
}

// A freshly inferred frame whose GRAY16_LE samples went past input-bits
// (clamped to white; counted by the session): a warning when
// SaturationReport says so, with the setting that would have held them.
static void check_saturation(GstTorchInfer* self, OutputState& out, const FrameInference& rec) {
  State* st = self->state;
  if (!out.saturation_report.record(rec.saturation, std::chrono::steady_clock::now())) return;
  GST_ELEMENT_WARNING(
      self, STREAM, FORMAT,
      ("%s", saturation_warning(st->run.input_bits, rec.saturation, out.saturation_report).c_str()),
      ("input-bits says how many low bits of a GRAY16_LE sample are significant: 12 for a "
       "Mono12 camera, 16 for Mono16"));
}

// An event in its place: a new segment or stream lets frames in again after
// downstream's EOS.
static void event_out(GstTorchInfer* self, OutputState& out, GstEvent* ev) {
  const bool restarts =
      GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT || GST_EVENT_TYPE(ev) == GST_EVENT_STREAM_START;
  // Before the push: once downstream has the new segment, a frame behind
  // it must not be refused.
  if (restarts) self->state->session.accept_again(GST_FLOW_EOS);
  if (out.not_pushed && (restarts || GST_EVENT_TYPE(ev) == GST_EVENT_EOS)) {
    // Downstream asked for them to stop: not a loss to warn about, but
    // frames-out falls short of frames-in by this many.
    GST_INFO_OBJECT(self, "%" G_GUINT64_FORMAT " frames not pushed after downstream's EOS",
                    out.not_pushed);
    out.not_pushed = 0;
  }
  push_event_out(self, out, ev);
}

// A frame with its results, or the error that stops the output.
static void frame_out(GstTorchInfer* self, OutputState& state, StreamOutput& out) {
  StreamSession& session = self->state->session;
  if (!out.error.empty()) {
    post_error(GST_ELEMENT(self), ErrorKind::kRuntime, "Inference failed: " + out.error);
    session.discard(out);
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  GstBuffer* buf = gst_buffer_make_writable(GST_BUFFER(out.obj.release()));
  if (!attach(self, state, buf, out)) {
    gst_buffer_unref(buf);
    session.discard(out);
    stop_output(self, GST_FLOW_ERROR);
    return;
  }
  const bool valid = !out.inferred || check_valid(self, state, *out.results);
  if (out.inferred) check_saturation(self, state, *out.results);
  if (std::optional<StatsSnapshot> snap = session.finish(out, valid)) post_stats(self, *snap);
  const GstFlowReturn ret = gst_pad_push(self->srcpad, buf);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "downstream returned %s, pausing", gst_flow_get_name(ret));
    stop_output(self, ret);
  }
}

void gst_torchinfer_loop(gpointer element) {
  auto* self = GST_TORCHINFER(element);
  StreamSession& session = self->state->session;
  std::optional<StreamOutput> out = session.pop();
  if (!out) {
    gst_pad_pause_task(self->srcpad);
    return;
  }
  const auto state = self->state->output.borrow();
  if (out->is_event) {
    event_out(self, *state, GST_EVENT(out->obj.release()));
  } else if (session.output_code() == GST_FLOW_EOS) {
    ++state->not_pushed;
    session.discard(*out);
  } else {
    frame_out(self, *state, *out);
  }
}

gboolean gst_torchinfer_src_query(GstPad* pad, GstObject* parent, GstQuery* query) {
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
