#include "camera.h"

#include <gst/video/video.h>

#include <cstdio>
#include <cstring>

#include "camera_analytics.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "server/jpeg_snapshot.h"
#include "server/source_check.h"
#include "server/stream_analytics.h"

namespace torchinfer::server {

namespace {

std::uint64_t stat_u64(const GstStructure* s, const char* field) {
  guint64 v = 0;
  return s && gst_structure_get_uint64(s, field, &v) ? v : 0;
}

double stat_double(const GstStructure* s, const char* field) {
  double v = 0;
  return s && gst_structure_get_double(s, field, &v) ? v : 0;
}

// The torchinfer figures of a camera (a snapshot; the element computes it).
GstStructure* infer_stats(GstElement* infer) {
  GstStructure* s = nullptr;
  if (infer) g_object_get(infer, "stats", &s, nullptr);
  return s;
}

// Bayer frames for the snapshot encoder: one plane, rows padded to 4
// bytes (GStreamer's layout for video/x-bayer, which GstVideoInfo does not
// know).
bool bayer_image_of(const GstStructure* st, const GstMapInfo& map, RawImage* img,
                    std::string* why) {
  const char* order = gst_structure_get_string(st, "format");
  gst_structure_get_int(st, "width", &img->width);
  gst_structure_get_int(st, "height", &img->height);
  img->strides[0] = (img->width + 3) & ~3;
  img->planes[0] = map.data;
  if (!order || !raw_format_from_name(order, &img->format) || img->width <= 0 || img->height <= 0 ||
      map.size < static_cast<std::size_t>(img->strides[0]) * img->height) {
    *why = "the Bayer frame does not match its caps";
    return false;
  }
  return true;
}

std::vector<std::uint8_t> encode_or_say(const RawImage& img, std::string* why) {
  try {
    return encode_jpeg(img);
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return {};
}

// A machine-vision camera's health (server/camera_health.h) for the REST API.
nlohmann::json health_json(const CameraVerdict& v) {
  return {{"state", to_string(v.condition)},
          {"reason", v.reason},
          {"lost_ratio", v.lost_ratio},
          {"window_frames", {{"received", v.window_received}, {"lost", v.window_lost}}},
          {"since_frame_s", v.since_frame_s}};
}

std::vector<SnapshotBox> boxes_of(GstBuffer* buf) {
  std::vector<SnapshotBox> boxes;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    GstTorchDetection d;
    const bool det = gst_torch_detection_from_roi(roi, &d);
    boxes.push_back({static_cast<int>(roi->x), static_cast<int>(roi->y), static_cast<int>(roi->w),
                     static_cast<int>(roi->h), det && d.label ? d.label : ""});
  }
  return boxes;
}

}  // namespace

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
}

}  // namespace

bool Camera::build(std::string* why) {
  pipeline_ = gst_pipeline_new(("stream-" + spec_.id).c_str());
  std::vector<GstElement*> chain;  // linked in order after the source
  GstElement* source = nullptr;
  GstElement* decode = nullptr;
  switch (spec_.kind) {
    case SourceKind::kFile:
      source = make("filesrc", "source", why);
      decode = make("decodebin", "decode", why);
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
  const bool as_is = spec_.kind == SourceKind::kAravis;  // no conversion, no overlay
  convert_ = as_is ? nullptr : make("videoconvert", "convert", why);
  GstElement* caps = as_is ? nullptr : make("capsfilter", "caps", why);
  infer_ = make("torchinfer", "infer", why);
  if (infer_) gst_object_ref(infer_);  // ours (the destructor's), besides the bin's
  GstElement* nms = make("torchnms", "nms", why);
  GstElement* track = spec_.track ? make("torchtrack", "track", why) : nullptr;
  // Always with tracking: PUT /streams/{id}/analytics adds lines later.
  analytics_ = spec_.track ? make("torchanalytics", "analytics", why) : nullptr;
  if (analytics_) gst_object_ref(analytics_);  // ours (the destructor's), besides the bin's
  GstElement* meta = spec_.json ? make("torchmetaconvert", "json", why) : nullptr;
  GstElement* publish = spec_.mqtt_topic.empty() ? nullptr : make("torchpublish", "mqtt", why);
  GstElement* overlay = as_is ? nullptr : make("torchoverlay", "overlay", why);
  GstElement* sink = make("appsink", "snapshot", why);
  // Evidence: the recorder's ring branch leaves from here (camera_evidence.h).
  GstElement* tee = spec_.evidence && caps ? make("tee", "evidence-tee", why) : nullptr;
  if (spec_.evidence && !evidence_ && why->empty()) *why = "evidence: " + evidence_error_;
  for (GstElement* e : {source, decode, convert_, caps, tee, infer_, nms, track, analytics_, meta,
                        publish, overlay, sink})
    if (e) gst_bin_add(GST_BIN(pipeline_), e);
  if (!why->empty()) return false;
  if (analytics_ && !apply_layout(analytics_, layout_path(), spec_.analytics, why)) return false;

  // The formats the snapshot encoder reads; cameras' own YUY2/NV12 and a
  // decoder's I420 pass without conversion.
  if (caps) {
    GstCaps* raw = gst_caps_from_string("video/x-raw,format={YUY2,I420,NV12}");
    g_object_set(caps, "caps", raw, nullptr);
    gst_caps_unref(raw);
  }

  set_analysis(infer_, model_, spec_);
  if (spec_.confidence_threshold)
    g_object_set(nms, "confidence-threshold", *spec_.confidence_threshold, nullptr);
  if (spec_.iou_threshold) g_object_set(nms, "iou-threshold", *spec_.iou_threshold, nullptr);
  if (meta) {
    const std::string path = output_dir_ + "/" + spec_.id + ".jsonl";
    g_object_set(meta, "location", path.c_str(), nullptr);
  }
  if (publish) {
    g_object_set(publish, "host", mqtt_.host.c_str(), "port", mqtt_.port, "topic",
                 spec_.mqtt_topic.c_str(), "qos", mqtt_.qos, nullptr);
  }
  // Files play at their own pace, as a camera would; live sources are
  // paced by the camera already.
  g_object_set(sink, "max-buffers", 1u, "drop", TRUE, "sync", spec_.kind == SourceKind::kFile,
               "enable-last-sample", FALSE, nullptr);
  GstAppSinkCallbacks cb = {};
  cb.new_sample = on_sample;
  gst_app_sink_set_callbacks(GST_APP_SINK(sink), &cb, this, nullptr);

  chain = as_is ? std::vector<GstElement*>{infer_, nms}
                : std::vector<GstElement*>{convert_, caps, infer_, nms};
  if (tee) chain.insert(chain.begin() + 2, tee);
  if (track) chain.push_back(track);
  if (analytics_) chain.push_back(analytics_);
  if (spec_.parts &&
      !(parts_ = CameraParts::attach(spec_, model_, classifier_, pipeline_, chain, why)))
    return false;
  if (meta) chain.push_back(meta);
  if (publish) chain.push_back(publish);
  if (overlay) chain.push_back(overlay);
  chain.push_back(sink);
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    if (!gst_element_link(chain[i], chain[i + 1])) {
      *why = std::string("cannot link ") + GST_ELEMENT_NAME(chain[i]) + " to " +
             GST_ELEMENT_NAME(chain[i + 1]);
      return false;
    }
  if (tee && !evidence_->attach(pipeline_, tee, analytics_ ? analytics_ : track, why)) return false;
  if (decode) {
    if (!gst_element_link(source, decode)) {
      *why = "cannot link the file source to decodebin";
      return false;
    }
    g_signal_connect(decode, "pad-added", G_CALLBACK(on_pad_added), this);
    if (spec_.loop) {
      GstPad* pad = gst_element_get_static_pad(convert_, "sink");
      gst_pad_add_probe(pad,
                        static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER |
                                                     GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
                        before_loop, this, nullptr);
      gst_object_unref(pad);
    }
  } else if (!gst_element_link(source, chain[0])) {
    *why = std::string("cannot link the source to ") + GST_ELEMENT_NAME(chain[0]);
    return false;
  }
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
    case GST_MESSAGE_APPLICATION: {
      const GstStructure* s = gst_message_get_structure(msg);
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
      break;
    }
    default:
      break;
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
    gpointer iter = nullptr;
    while (GstMeta* m = gst_buffer_iterate_meta_filtered(
               buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
      GstTorchDetection d;
      if (gst_torch_detection_from_roi(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), &d)) {
        labels.emplace_back(d.label ? d.label : "?");
        result.push_back({{"label", labels.back()}, {"confidence", d.confidence}});
      }
    }
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

std::uint64_t Camera::frames_inferred() const {
  GstStructure* s = infer_stats(infer_);
  const std::uint64_t n = stat_u64(s, "frames-inferred");
  if (s) gst_structure_free(s);
  return n;
}

// torchpublish's counters, for the publish-loss alert (deploy/prometheus).
void Camera::read_mqtt_counters(StreamFigures& f) const {
  if (spec_.mqtt_topic.empty() || !pipeline_) return;
  GstElement* mqtt = gst_bin_get_by_name(GST_BIN(pipeline_), "mqtt");
  if (!mqtt) return;
  guint64 published = 0, failed = 0, dropped = 0;
  g_object_get(mqtt, "published", &published, "failed", &failed, "dropped", &dropped, nullptr);
  gst_object_unref(mqtt);
  f.mqtt = true;
  f.mqtt_published = published;
  f.mqtt_failed = failed;
  f.mqtt_dropped = dropped;
}

namespace {

// A machine-vision camera's own counters; a running camera whose frames
// do not reach the analysis takes its condition as state (camera_health.h).
void read_camera_counters(const AravisCounters& c, StreamFigures& f) {
  f.camera = true;
  f.camera_frames_received = c.frames.received;
  f.camera_frames_incomplete = c.frames.incomplete;
  f.camera_frames_missing = c.frames.missing;
  f.camera_frames_overflow = c.overflow;
  f.camera_packets_missing = c.packets_missing;
  f.camera_packets_resent = c.packets_resent;
  f.camera_triggers = c.triggers;
  f.camera_trigger_failures = c.trigger_failures;
  f.camera_lost_ratio = c.health.lost_ratio;
  f.camera_since_frame_s = c.health.since_frame_s;
  if (f.state == "running" && c.health.condition != CameraCondition::kOk)
    f.state = to_string(c.health.condition);
}

}  // namespace

StreamFigures Camera::figures() const {
  StreamFigures f;
  f.id = spec_.id;
  f.model = spec_.model;
  {
    // Before torchinfer's counters: a frame leaving the pipeline between
    // the two reads would otherwise make "out" overtake what torchinfer let out.
    std::lock_guard<std::mutex> lock(mu_);
    f.frames_out = frames_out_;
  }
  GstStructure* s = infer_stats(infer_);
  // One structure, read at one moment: the counters add up.
  f.frames_in = stat_u64(s, "frames-in");
  f.frames_inferred = stat_u64(s, "frames-inferred");
  f.frames_skipped = stat_u64(s, "frames-skipped");
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    f.frames_skipped_by[r] = stat_u64(
        s, (std::string("frames-skipped-") + to_string(static_cast<SkipReason>(r))).c_str());
  f.frames_dropped = stat_u64(s, "frames-dropped");
  f.frames_in_flight = stat_u64(s, "frames-in-flight");
  f.frames_in_flight_limit = stat_u64(s, "frames-in-flight-limit");
  f.frames_invalid = stat_u64(s, "frames-invalid");
  f.frames_saturated = stat_u64(s, "frames-saturated");
  f.fps = stat_double(s, "fps");
  if (s) gst_structure_free(s);
  read_mqtt_counters(f);
  if (evidence_) evidence_->fill(f);
  {
    // Plain copies only under mu_: the streaming thread takes it per frame.
    std::lock_guard<std::mutex> lock(mu_);
    f.state = to_string(health_.state());
    f.latency_p50_s = latency_.quantile(0.5);
    f.latency_p99_s = latency_.quantile(0.99);
    f.latency_sum_s = latency_.sum();
    f.latency_count = latency_.count();
    f.reconnects = health_.reconnects();
    f.disconnects = health_.disconnects();
    f.errors = health_.errors();
    f.detections = detections_;
  }
  if (analytics_) read_counts(analytics_, f.lines, f.zones);
  if (aravis_) read_camera_counters(aravis_->counters(), f);
  if (restream_) {
    f.restream = true;
    f.restream_clients = restream_->clients();
    f.restream_frames_sent = restream_->frames_sent();
    f.restream_frames_dropped = restream_->frames_dropped();
  }
  if (parts_) parts_->figures(f);
  return f;
}

nlohmann::json Camera::status() const {
  const StreamFigures f = figures();
  std::string last_error, previous_error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error = health_.last_error();
    previous_error = health_.previous_error();
  }
  nlohmann::json skipped_by = nlohmann::json::object();
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    skipped_by[to_string(static_cast<SkipReason>(r))] = f.frames_skipped_by[r];
  nlohmann::json j = {
      {"id", f.id},
      {"uri", spec_.uri},
      {"model", f.model},
      {"state", f.state},
      {"last_error", last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_error)},
      {"previous_error",
       previous_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(previous_error)},
      {"fps", f.fps},
      {"frames",
       {{"in", f.frames_in},
        {"inferred", f.frames_inferred},
        {"skipped", f.frames_skipped},
        {"skipped_by", skipped_by},
        {"dropped", f.frames_dropped},
        {"in_flight", f.frames_in_flight},
        {"in_flight_limit", f.frames_in_flight_limit},
        {"out", f.frames_out},
        {"invalid", f.frames_invalid},
        {"saturated", f.frames_saturated}}},
      {"latency_ms", {{"p50", f.latency_p50_s * 1e3}, {"p99", f.latency_p99_s * 1e3}}},
      {"reconnects", f.reconnects},
      {"disconnects", f.disconnects},
      {"detections", f.detections},
      {"rtsp_url", restream_ ? nlohmann::json(restream_->url()) : nlohmann::json(nullptr)},
      {"rtsp_clients", f.restream_clients},
      {"rtsp_frames", {{"sent", f.restream_frames_sent}, {"dropped", f.restream_frames_dropped}}},
      {"config", to_json(spec_)}};
  if (aravis_) j["camera"] = camera_status(f);
  if (evidence_) j["evidence"] = evidence_->status();
  if (parts_) parts_->status(j);
  std::lock_guard<std::mutex> lock(mu_);
  j["config"] = to_json(spec_with(layout_));
  j["analytics"] = analytics_ ? counts_json(f.lines, f.zones) : nlohmann::json(nullptr);
  return j;
}

StreamSpec Camera::spec_with(const AnalyticsConfig& layout) const {
  StreamSpec s = spec_;
  s.analytics = layout;
  return s;
}

std::string Camera::layout_path() const {
  return output_dir_ + "/" + spec_.id + ".analytics.json";
}

int Camera::set_analytics(const AnalyticsConfig& layout, std::string* why) {
  if (!analytics_) {
    *why = "stream '" + spec_.id +
           "' runs without tracking (\"track\": false): lines and zones count tracked objects; "
           "add the stream again with \"track\": true";
    return 409;
  }
  std::lock_guard<std::mutex> lock(layout_mu_);  // one writer of the file at a time
  if (!apply_layout(analytics_, layout_path(), layout, why)) return 500;
  std::lock_guard<std::mutex> state(mu_);
  layout_ = layout;
  return 200;
}

nlohmann::json Camera::analytics_status() const {
  const nlohmann::json s = status();
  const nlohmann::json& c = s["config"];
  return {{"id", spec_.id},
          {"lines", c.value("lines", nlohmann::json::array())},
          {"zones", c.value("zones", nlohmann::json::array())},
          {"analytics", s["analytics"]}};
}

nlohmann::json Camera::camera_status(const StreamFigures& f) const {
  const AravisCounters c = aravis_->counters();
  nlohmann::json last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = last_result_;
  }
  return {{"name", spec_.camera.name},
          {"acquiring", c.acquiring},
          {"pixel_format", c.pixel_format},
          {"width", c.width},
          {"height", c.height},
          {"trigger", to_string(spec_.camera.trigger)},
          {"frames",
           {{"received", f.camera_frames_received},
            {"lost", c.frames.lost() + c.overflow},
            {"incomplete", f.camera_frames_incomplete},
            {"missing", f.camera_frames_missing},
            {"overflow", f.camera_frames_overflow}}},
          {"packets", {{"missing", f.camera_packets_missing}, {"resent", f.camera_packets_resent}}},
          {"aravis",
           {{"completed", c.completed},
            {"failures", c.failures},
            {"missing_frames", c.missing_frames},
            {"underruns", c.underruns}}},
          {"health", health_json(c.health)},
          {"triggers", f.camera_triggers},
          {"trigger_failures", c.trigger_failures},
          {"triggers_pending", c.triggers_pending},
          {"last_result", last}};
}

int Camera::trigger(std::string* why) {
  if (!aravis_) {
    *why =
        "stream '" + spec_.id + "' is not a machine-vision camera (aravis://): nothing to trigger";
    return 409;
  }
  if (spec_.camera.trigger != TriggerMode::kSoftware) {
    *why = "stream '" + spec_.id + "': camera '" + spec_.camera.name + "' is in " +
           to_string(spec_.camera.trigger) +
           " mode; a software trigger needs \"trigger\": \"software\"";
    return 409;
  }
  return aravis_->trigger(why);
}

std::vector<std::uint8_t> Camera::snapshot_jpeg(std::string* why) const {
  GstSample* sample = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (latest_) sample = gst_sample_ref(latest_);
  }
  if (!sample) {
    *why = "no frame yet";
    return {};
  }
  GstCaps* caps = gst_sample_get_caps(sample);
  GstBuffer* buf = gst_sample_get_buffer(sample);
  const GstStructure* st =
      caps && gst_caps_get_size(caps) ? gst_caps_get_structure(caps, 0) : nullptr;
  std::vector<std::uint8_t> jpeg;
  RawImage img;
  // Drawn here: a machine-vision camera's frames skip torchoverlay (camera.h).
  if (aravis_ && buf) img.boxes = boxes_of(buf);
  GstMapInfo map;
  GstVideoInfo info;
  GstVideoFrame frame;
  if (st && buf && gst_structure_has_name(st, "video/x-bayer")) {
    if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
      if (bayer_image_of(st, map, &img, why)) jpeg = encode_or_say(img, why);
      gst_buffer_unmap(buf, &map);
    } else {
      *why = "the frame cannot be read";
    }
  } else if (!caps || !buf || !gst_video_info_from_caps(&info, caps) ||
             !raw_format_from_name(gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)),
                                   &img.format)) {
    *why = "the frame's format cannot be encoded";
  } else if (gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) {
    img.width = GST_VIDEO_FRAME_WIDTH(&frame);
    img.height = GST_VIDEO_FRAME_HEIGHT(&frame);
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < 3; ++p) {
      img.planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
      img.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    }
    if (aravis_) img.bits = aravis_->counters().bits;
    jpeg = encode_or_say(img, why);
    gst_video_frame_unmap(&frame);
  } else {
    *why = "the frame cannot be read";
  }
  // Not on the main loop: this may be the last reference (see take_sample).
  if (pipeline_)
    gst_element_call_async(
        pipeline_, [](GstElement*, gpointer p) { gst_sample_unref(static_cast<GstSample*>(p)); },
        sample, nullptr);
  else
    gst_sample_unref(sample);
  return jpeg;
}

}  // namespace torchinfer::server
