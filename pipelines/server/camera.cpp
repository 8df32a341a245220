#include "camera.h"

#include <gst/video/video.h>

#include <cstdio>
#include <cstring>

#include "camera_analytics.h"
#include "camera_inference.h"
#include "evidence/core/jpeg_snapshot.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "server/core/source_check.h"
#include "server/core/stream_analytics.h"

namespace torchinfer::server {

Camera::Camera(StreamSpec spec, ModelSpec model, std::string output_dir, MqttSpec mqtt,
               std::shared_ptr<RestreamFeed> restream)
    : spec_(std::move(spec)),
      model_(std::move(model)),
      output_dir_(std::move(output_dir)),
      mqtt_(std::move(mqtt)),
      restream_(std::move(restream)),
      layout_(spec_.analytics) {}

Camera::~Camera() {
  detach();
  shutdown(0);
  if (latest_) gst_sample_unref(latest_);
  rtsp_.reset();
  // On the server's reaper thread: a camera that stopped answering gets a
  // bounded wait, then its connection closes in the background, said on
  // stderr (its controller privilege lasts until Aravis' retries end).
  if (aravis_) aravis_->stop();
  aravis_.reset();
  if (appsrc_) gst_object_unref(appsrc_);
  if (infer_) gst_object_unref(infer_);
  if (analytics_) gst_object_unref(analytics_);
  if (pipeline_) gst_object_unref(pipeline_);
}

GstElement* Camera::make(const char* factory, const char* name, std::string* why) {
  GstElement* e = gst_element_factory_make(factory, name);
  if (!e && why->empty())
    *why = std::string("GStreamer element '") + factory +
           "' is not installed (torchinfer's: set GST_PLUGIN_PATH to the plugin folder)";
  return e;
}

namespace {

// torchinfer's settings from the camera's model and stream entries.
void set_analysis(GstElement* infer, const ModelSpec& model, const StreamSpec& spec) {
  g_object_set(infer, "model", model.path.c_str(), "model-instance-id", model.id.c_str(), nullptr);
  gst_util_set_object_arg(G_OBJECT(infer), "batch-size", std::to_string(model.batch_size).c_str());
  gst_util_set_object_arg(G_OBJECT(infer), "batch-timeout",
                          std::to_string(model.batch_timeout_us).c_str());
  if (model.threads > 0)
    gst_util_set_object_arg(G_OBJECT(infer), "threads", std::to_string(model.threads).c_str());
  gst_util_set_object_arg(G_OBJECT(infer), "lanes", std::to_string(model.lanes).c_str());
  gst_util_set_object_arg(G_OBJECT(infer), "inference-interval",
                          std::to_string(spec.inference_interval).c_str());
  if (spec.roi) {
    const std::string crop = std::to_string(spec.roi->x) + "," + std::to_string(spec.roi->y) + "," +
                             std::to_string(spec.roi->width) + "," +
                             std::to_string(spec.roi->height);
    g_object_set(infer, "crop", crop.c_str(), nullptr);
  }
  set_gate_and_tiles(infer, spec.inference);
}

}  // namespace

// The source element (and decodebin for a file), set from the spec.
GstElement* Camera::make_source(GstElement** decode, std::string* why) {
  GstElement* source = nullptr;
  switch (spec_.kind) {
    case SourceKind::kFile:
      source = make("filesrc", "source", why);
      *decode = make("decodebin", "decode", why);
      if (source) g_object_set(source, "location", spec_.location.c_str(), nullptr);
      break;
    case SourceKind::kV4l2:
      source = make("v4l2src", "source", why);
      if (source) g_object_set(source, "device", spec_.location.c_str(), nullptr);
      break;
    case SourceKind::kAravis:
      // Queue bounds are AravisSource's (it counts what it cannot hand on).
      source = make("appsrc", "source", why);
      if (source)
        g_object_set(source, "format", GST_FORMAT_TIME, "is-live", TRUE, "do-timestamp", TRUE,
                     nullptr);
      break;
    case SourceKind::kRtsp:
      source = make("appsrc", "source", why);
      if (source) {
        g_object_set(source, "format", GST_FORMAT_TIME, "is-live", TRUE, "max-buffers",
                     static_cast<guint64>(30), nullptr);
        gst_util_set_object_arg(G_OBJECT(source), "leaky-type", "downstream");
      }
      break;
  }
  return source;
}

// Every element of the camera made and added to the pipeline, in the
// order they are linked after the source (tee: the evidence branch's).
bool Camera::make_elements(Elements& e, std::string* why) {
  const bool as_is = spec_.kind == SourceKind::kAravis;  // no conversion, no overlay
  e.source = make_source(&e.decode, why);
  convert_ = as_is ? nullptr : make("videoconvert", "convert", why);
  e.caps = as_is ? nullptr : make("capsfilter", "caps", why);
  infer_ = make("torchinfer", "infer", why);
  if (infer_) gst_object_ref(infer_);  // ours (the destructor's), besides the bin's
  e.nms = make("torchnms", "nms", why);
  e.track = spec_.track ? make("torchtrack", "track", why) : nullptr;
  // Always with tracking: PUT /streams/{id}/analytics adds lines later.
  analytics_ = spec_.track ? make("torchanalytics", "analytics", why) : nullptr;
  if (analytics_) gst_object_ref(analytics_);  // ours (the destructor's), besides the bin's
  e.meta = spec_.json ? make("torchmetaconvert", "json", why) : nullptr;
  e.publish = spec_.mqtt_topic.empty() ? nullptr : make("torchpublish", "mqtt", why);
  e.overlay = as_is ? nullptr : make("torchoverlay", "overlay", why);
  e.sink = make("appsink", "snapshot", why);
  // Evidence: the recorder's ring branch leaves from here (camera_evidence.h).
  e.tee = spec_.evidence && e.caps ? make("tee", "evidence-tee", why) : nullptr;
  if (spec_.evidence && !evidence_ && why->empty()) *why = "evidence: " + evidence_error_;
  for (GstElement* x : {e.source, e.decode, convert_, e.caps, e.tee, infer_, e.nms, e.track,
                        analytics_, e.meta, e.publish, e.overlay, e.sink})
    if (x) gst_bin_add(GST_BIN(pipeline_), x);
  return why->empty();
}

// The elements' settings from the spec; the appsink hands frames to us.
void Camera::configure(const Elements& e) {
  // The formats the snapshot encoder reads; cameras' own YUY2/NV12 and a
  // decoder's I420 pass without conversion.
  if (e.caps) {
    GstCaps* raw = gst_caps_from_string("video/x-raw,format={YUY2,I420,NV12}");
    g_object_set(e.caps, "caps", raw, nullptr);
    gst_caps_unref(raw);
  }
  set_analysis(infer_, model_, spec_);
  if (spec_.confidence_threshold)
    g_object_set(e.nms, "confidence-threshold", *spec_.confidence_threshold, nullptr);
  if (spec_.iou_threshold) g_object_set(e.nms, "iou-threshold", *spec_.iou_threshold, nullptr);
  if (e.meta) {
    const std::string path = output_dir_ + "/" + spec_.id + ".jsonl";
    g_object_set(e.meta, "location", path.c_str(), nullptr);
  }
  if (e.publish) {
    g_object_set(e.publish, "host", mqtt_.host.c_str(), "port", mqtt_.port, "topic",
                 spec_.mqtt_topic.c_str(), "qos", mqtt_.qos, nullptr);
  }
  // Files play at their own pace, as a camera would; live sources are
  // paced by the camera already.
  g_object_set(e.sink, "max-buffers", 1u, "drop", TRUE, "sync", spec_.kind == SourceKind::kFile,
               "enable-last-sample", FALSE, nullptr);
  GstAppSinkCallbacks cb = {};
  cb.new_sample = on_sample;
  gst_app_sink_set_callbacks(GST_APP_SINK(e.sink), &cb, this, nullptr);
}

// The analysis chain in order: conversion, torchinfer, torchnms, tracking,
// codes and parts (camera_codes.h, camera_parts.h), outputs, the appsink.
bool Camera::make_chain(const Elements& e, std::vector<GstElement*>& chain, std::string* why) {
  chain = e.caps ? std::vector<GstElement*>{convert_, e.caps, infer_, e.nms}
                 : std::vector<GstElement*>{infer_, e.nms};
  if (e.tee) chain.insert(chain.begin() + 2, e.tee);
  if (e.track) chain.push_back(e.track);
  if (analytics_) chain.push_back(analytics_);
  if (spec_.codes && spec_.codes->enable &&
      !(codes_ = CameraCodes::attach(spec_, pipeline_, chain, why)))
    return false;
  if (spec_.parts &&
      !(parts_ = CameraParts::attach(spec_, model_, classifier_, pipeline_, chain, why)))
    return false;
  for (GstElement* x : {e.meta, e.publish, e.overlay, e.sink})
    if (x) chain.push_back(x);
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    if (!gst_element_link(chain[i], chain[i + 1])) {
      *why = std::string("cannot link ") + GST_ELEMENT_NAME(chain[i]) + " to " +
             GST_ELEMENT_NAME(chain[i + 1]);
      return false;
    }
  return true;
}

// The source to the chain: decodebin's pad when it comes (a looped file's
// frames held until its first segment seek), else linked now.
bool Camera::link_source(const Elements& e, GstElement* first, std::string* why) {
  if (!e.decode) {
    if (gst_element_link(e.source, first)) return true;
    *why = std::string("cannot link the source to ") + GST_ELEMENT_NAME(first);
    return false;
  }
  if (!gst_element_link(e.source, e.decode)) {
    *why = "cannot link the file source to decodebin";
    return false;
  }
  g_signal_connect(e.decode, "pad-added", G_CALLBACK(on_pad_added), this);
  if (spec_.loop) {
    GstPad* pad = gst_element_get_static_pad(convert_, "sink");
    gst_pad_add_probe(pad,
                      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER |
                                                   GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
                      before_loop, this, nullptr);
    gst_object_unref(pad);
  }
  return true;
}

// What feeds an appsrc: the machine-vision camera, or the RTSP client.
bool Camera::attach_feeder(GstElement* source, std::string* why) {
  if (spec_.kind == SourceKind::kAravis) {
    appsrc_ = GST_APP_SRC(gst_object_ref(source));
    aravis_ = std::make_shared<AravisSource>(spec_.camera, appsrc_, infer_);
    if (!AravisSource::configure_infer(spec_.camera, infer_, why)) return false;
  }
  if (spec_.kind == SourceKind::kRtsp) {
    appsrc_ = GST_APP_SRC(gst_object_ref(source));
    rtsp::SourceOptions opt;
    opt.url = spec_.location;
    rtsp_ = std::make_unique<rtsp::ReconnectingSource>(opt, appsrc_);
    if (!rtsp_->validate(why)) return false;
  }
  return true;
}

bool Camera::build(std::string* why) {
  pipeline_ = gst_pipeline_new(("stream-" + spec_.id).c_str());
  Elements e;
  if (!make_elements(e, why)) return false;
  if (analytics_ && !apply_layout(analytics_, layout_path(), spec_.analytics, why)) return false;
  configure(e);
  std::vector<GstElement*> chain;  // linked in order after the source
  if (!make_chain(e, chain, why)) return false;
  if (e.tee && !evidence_->attach(pipeline_, e.tee, analytics_ ? analytics_ : e.track, why))
    return false;
  return link_source(e, chain[0], why) && attach_feeder(e.source, why);
}

void Camera::on_pad_added(GstElement*, GstPad* pad, gpointer user) {
  auto* self = static_cast<Camera*>(user);
  GstCaps* caps = gst_pad_get_current_caps(pad);
  if (!caps) caps = gst_pad_query_caps(pad, nullptr);
  const bool video =
      caps && gst_caps_get_size(caps) > 0 &&
      g_str_has_prefix(gst_structure_get_name(gst_caps_get_structure(caps, 0)), "video/");
  if (caps) gst_caps_unref(caps);
  if (!video) return;
  GstPad* sinkpad = gst_element_get_static_pad(self->convert_, "sink");
  if (!gst_pad_is_linked(sinkpad)) gst_pad_link(pad, sinkpad);
  gst_object_unref(sinkpad);
}

// Looping with segment seeks: the end of each pass posts SEGMENT_DONE
// instead of EOS, and the next pass starts without a flush, so downstream
// (torchinfer's batches, the JSON) sees one unbroken stream. The first
// segment seek flushes, so no frame may enter the analysis before it: the
// probe drops frames until the segment of that seek arrives, and asks for
// the seek at the first frame (when the demuxer can take it).
GstPadProbeReturn Camera::before_loop(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* self = static_cast<Camera*>(user);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    if (!self->seeked_) {
      self->seeked_ = true;
      gst_element_call_async(
          self->pipeline_,
          [](GstElement* p, gpointer) {
            gst_element_seek(p, 1.0, GST_FORMAT_TIME,
                             static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_SEGMENT),
                             GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE);
          },
          nullptr, nullptr);
    }
    return GST_PAD_PROBE_DROP;
  }
  GstEvent* ev = GST_PAD_PROBE_INFO_EVENT(info);
  if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT) {
    const GstSegment* seg = nullptr;
    gst_event_parse_segment(ev, &seg);
    if (seg->flags & GST_SEGMENT_FLAG_SEGMENT) return GST_PAD_PROBE_REMOVE;
  }
  return GST_PAD_PROBE_OK;
}

bool Camera::start() {
  std::string why;
  if (spec_.kind == SourceKind::kFile) why = file_source_problem(spec_.location);
  if (!why.empty() || !build(&why)) {
    fail(why);
    return false;
  }
  GstBus* bus = gst_element_get_bus(pipeline_);
  bus_watch_ = gst_bus_add_watch(bus, on_bus, this);
  gst_object_unref(bus);
  play_async();
  return true;
}

// The outcome comes back on the bus: an ERROR from the element that could
// not start (model, device, file), else "torchinfer-server-started" (or
// "-not-started" when nothing said why), handled on the main loop.
void Camera::play_async() {
  gst_element_call_async(
      pipeline_,
      [](GstElement* p, gpointer user) {
        auto* gate = static_cast<std::shared_ptr<StartGate>*>(user);
        GstStateChangeReturn r;
        {
          std::lock_guard<std::mutex> lock((*gate)->mu);
          if ((*gate)->closed) return;
          r = gst_element_set_state(p, GST_STATE_PLAYING);
        }
        const bool ok = r != GST_STATE_CHANGE_FAILURE;
        gst_element_post_message(
            p, gst_message_new_application(
                   GST_OBJECT(p), gst_structure_new_empty(ok ? "torchinfer-server-started"
                                                             : "torchinfer-server-not-started")));
      },
      new std::shared_ptr<StartGate>(start_gate_),
      [](gpointer user) { delete static_cast<std::shared_ptr<StartGate>*>(user); });
}

void Camera::fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool first = health_.state() != StreamState::kFailed;
    health_.on_error(message);
    if (!first) return;  // the first error says why; the rest follow from it
  }
  drained_ = true;  // nothing more will come out of it
  g_printerr("torchinfer-server: stream %s failed: %s\n", spec_.id.c_str(), message.c_str());
  if (pipeline_ && !detached_) {
    // Release the camera, the files and the model now; on GStreamer's own
    // thread pool, since a state change may wait on streaming threads.
    gst_element_call_async(
        pipeline_, [](GstElement* p, gpointer) { gst_element_set_state(p, GST_STATE_NULL); },
        nullptr, nullptr);
  }
}

gboolean Camera::on_bus(GstBus*, GstMessage* msg, gpointer user) {
  static_cast<Camera*>(user)->handle_message(msg);
  return G_SOURCE_CONTINUE;
}

void Camera::handle_message(GstMessage* msg) {
  switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR: {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      gst_message_parse_error(msg, &err, &dbg);
      std::string text = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " +
                         (err ? err->message : "unknown error");
      // Source elements' messages are generic ("Resource not found."); the
      // last line of their debug text names the file or device.
      if (const char* nl = dbg ? std::strrchr(dbg, '\n') : nullptr)
        if (nl[1]) text += std::string(" (") + (nl + 1) + ")";
      g_clear_error(&err);
      g_free(dbg);
      if (rtsp_) rtsp_->stop();
      if (aravis_) aravis_->request_stop();
      fail(text);
      break;
    }
    case GST_MESSAGE_WARNING: {
      GError* err = nullptr;
      gst_message_parse_warning(msg, &err, nullptr);
      g_printerr("torchinfer-server: stream %s: warning from %s: %s\n", spec_.id.c_str(),
                 GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), err ? err->message : "");
      g_clear_error(&err);
      break;
    }
    case GST_MESSAGE_EOS:
      if (!draining_ && spec_.kind == SourceKind::kFile && spec_.loop) {
        // A demuxer that does not do segment seeks ends instead: start over.
        gst_element_seek_simple(pipeline_, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 0);
        break;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        health_.on_eos();
      }
      // The clips still waiting for post_s get what the ring holds.
      if (evidence_) evidence_->finish_async(pipeline_);
      drained_ = true;
      break;
    case GST_MESSAGE_SEGMENT_DONE:
      if (!draining_)
        gst_element_seek(pipeline_, 1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_SEGMENT, GST_SEEK_TYPE_SET,
                         0, GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE);
      else
        send_eos();
      break;
    case GST_MESSAGE_APPLICATION:
      handle_app_message(gst_message_get_structure(msg));
      break;
    default:
      break;
  }
}

// The asynchronous start's outcome (play_async) and the RTSP source's news.
void Camera::handle_app_message(const GstStructure* s) {
  if (gst_structure_has_name(s, "torchinfer-server-started")) {
    if (rtsp_ && !draining_) rtsp_->start();
    if (aravis_ && !draining_) aravis_->start();
  } else if (gst_structure_has_name(s, "torchinfer-server-not-started")) {
    bool said = false;  // the element's error, just before, said why
    {
      std::lock_guard<std::mutex> lock(mu_);
      said = health_.state() == StreamState::kFailed;
    }
    if (!said) fail("the pipeline cannot start");
  } else if (gst_structure_has_name(s, "torchinfer-rtsp-lost")) {
    const char* reason = gst_structure_get_string(s, "reason");
    std::lock_guard<std::mutex> lock(mu_);
    health_.on_source_lost(std::string("rtsp: ") + (reason ? reason : "lost"));
  } else if (gst_structure_has_name(s, "torchinfer-rtsp-resumed")) {
    std::lock_guard<std::mutex> lock(mu_);
    health_.on_source_resumed();
  } else {
    handle_camera_message(s);
  }
}

// AravisSource's news (aravis_source.h), told as the RTSP source's are.
void Camera::handle_camera_message(const GstStructure* s) {
  const char* reason = gst_structure_get_string(s, "reason");
  const std::string why = reason ? reason : "";
  if (gst_structure_has_name(s, "torchinfer-aravis-ready")) {
    std::lock_guard<std::mutex> lock(mu_);
    health_.on_source_ready();
  } else if (gst_structure_has_name(s, "torchinfer-aravis-lost")) {
    g_printerr("torchinfer-server: stream %s: %s; retrying\n", spec_.id.c_str(), why.c_str());
    std::lock_guard<std::mutex> lock(mu_);
    health_.on_source_lost("aravis: " + why);
  } else if (gst_structure_has_name(s, "torchinfer-aravis-failed")) {
    fail("aravis: " + why);
  }
}

GstFlowReturn Camera::on_sample(GstAppSink* sink, gpointer user) {
  GstSample* sample = gst_app_sink_pull_sample(sink);
  if (!sample) return GST_FLOW_EOS;
  static_cast<Camera*>(user)->take_sample(sample);
  return GST_FLOW_OK;
}

void Camera::take_sample(GstSample* sample) {
  GstBuffer* buf = gst_sample_get_buffer(sample);
  GstTorchTensorMeta* tm = buf ? gst_buffer_get_torch_tensor_meta(buf) : nullptr;
  const bool inferred = tm && tm->inferred;
  std::vector<std::string> labels;
  nlohmann::json result = nlohmann::json::array();
  if (inferred) {
    gst_torch::foreach_detection(
        buf, [&](GstVideoRegionOfInterestMeta*, const GstTorchDetection& d) {
          labels.emplace_back(d.label ? d.label : "?");
          result.push_back({{"label", labels.back()}, {"confidence", d.confidence}});
        });
  }
  if (restream_) restream_->push(buf, gst_sample_get_caps(sample));
  // A sample of our own: appsink reuses the one it hands out, and changes
  // its caps in place on the next caps event.
  GstSample* own = gst_sample_new(buf, gst_sample_get_caps(sample), nullptr, nullptr);
  GstSample* previous = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    frames_out_++;
    health_.on_frame();
    if (inferred) {
      latency_.add((tm->queue_ns + tm->preprocess_ns + tm->inference_ns) / 1e9);
      for (const auto& l : labels) detections_[l]++;
      // What a triggered camera's caller reads back (POST .../trigger).
      last_result_ = {{"frame", frames_out_}, {"detections", std::move(result)}};
    }
    previous = latest_;
    latest_ = own;
  }
  // Outside mu_, which the API reads: the last frame of a lost camera's
  // connection gives its memory back to that connection's Aravis stream,
  // whose end waits ~5 s for its receiving thread (measured: /livez and
  // /streams waited 4.9 s on mu_ after every reconnection).
  gst_sample_unref(sample);
  if (previous) gst_sample_unref(previous);
}

void Camera::begin_drain() {
  if (draining_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.state() == StreamState::kFailed || health_.state() == StreamState::kEnded)
      drained_ = true;
    health_.on_stopping();
  }
  if (drained_ || !pipeline_) {
    drained_ = true;
    return;
  }
  if (rtsp_) rtsp_->stop();
  if (aravis_) aravis_->request_stop();
  // Off the main loop: an EOS waits for the streaming thread, which an
  // output that blocks (a JSON reader that stopped reading) holds for good,
  // and /healthz and SIGTERM must still answer. The task holds only what it
  // needs (the camera may be gone when it ends): the target and the flag.
  struct Drain {
    GstElement* target;
    std::shared_ptr<std::atomic<bool>> refused;
  };
  GstElement* target = appsrc_ ? GST_ELEMENT(appsrc_) : convert_;
  gst_element_call_async(
      pipeline_,
      [](GstElement*, gpointer p) {
        auto* d = static_cast<Drain*>(p);
        if (!send_eos_to(d->target)) d->refused->store(true);  // not running: nothing to drain
      },
      new Drain{GST_ELEMENT(gst_object_ref(target)), eos_refused_},
      [](gpointer p) {
        auto* d = static_cast<Drain*>(p);
        gst_object_unref(d->target);
        delete d;
      });
}

// Into videoconvert, not the pipeline: a demuxer pulling from filesrc (the
// file case) never sees an EOS sent to its source. EOS is serialized, so it
// leaves after the frames already on their way. False when it cannot go in:
// the pipeline is not running (never started, failed): nothing to drain.
bool Camera::send_eos() {
  return send_eos_to(appsrc_ ? GST_ELEMENT(appsrc_) : convert_);
}

bool Camera::send_eos_to(GstElement* target) {
  if (GST_IS_APP_SRC(target)) return gst_app_src_end_of_stream(GST_APP_SRC(target)) == GST_FLOW_OK;
  GstPad* pad = gst_element_get_static_pad(target, "sink");
  const bool sent = gst_pad_send_event(pad, gst_event_new_eos());
  gst_object_unref(pad);
  return sent;
}

void Camera::detach() {
  if (detached_.exchange(true)) return;
  if (bus_watch_) g_source_remove(bus_watch_);
  bus_watch_ = 0;
  if (rtsp_) rtsp_->stop();
  if (aravis_) aravis_->request_stop();
  std::lock_guard<std::mutex> lock(mu_);
  health_.on_stopping();
}

void Camera::shutdown(double timeout_s) {
  {
    // After this, a start still queued on GStreamer's pool does nothing, and
    // one under way has finished.
    std::lock_guard<std::mutex> lock(start_gate_->mu);
    start_gate_->closed = true;
  }
  if (stopped_.exchange(true) || !pipeline_) return;
  // An EOS that cannot go in means nothing flows (the start never got
  // there): nothing to drain, and no reason to wait for it.
  if (!drained_ && timeout_s > 0 && !draining_.exchange(true) && !send_eos()) timeout_s = 0;
  if (!drained() && timeout_s > 0) {
    GstBus* bus = gst_element_get_bus(pipeline_);
    GstMessage* m = gst_bus_timed_pop_filtered(
        bus, static_cast<GstClockTime>(timeout_s * GST_SECOND),
        static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (m) gst_message_unref(m);
    gst_object_unref(bus);
  }
  gst_element_set_state(pipeline_, GST_STATE_NULL);
  release_latest();
  if (evidence_) evidence_->finish();
  if (parts_) parts_->finish();  // the parts on the belt get their pulses first
}

// The latest frame may hold the last reference to an Aravis stream, whose
// end waits for its receiving thread: released here, on the stopping thread,
// not by the destructor on the main loop.
void Camera::release_latest() {
  GstSample* last = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(last, latest_);
  }
  if (last) gst_sample_unref(last);
}

}  // namespace torchinfer::server
