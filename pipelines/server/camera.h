// One camera of torchinfer-server (camera.cpp: its pipeline's build and
// lifecycle; camera_status.cpp: figures, status and the REST requests): its
// own GstPipeline (so adding, failing or removing one never changes the
// state of another), sharing the loaded model with the other cameras
// through torchinfer's model-instance-id:
//
//   source ! videoconvert ! capsfilter ! torchinfer ! torchnms
//     [! torchtrack ! torchanalytics (lines, zones: camera_analytics.h)]
//     [! torchcodes (camera_codes.h)] [! torchinfer classifier (parts: camera_parts.h)]
//     [! torchmetaconvert location=<output_dir>/<id>.jsonl] [! torchpublish topic=...]
//     ! torchoverlay ! appsink (max-buffers=1 drop=true: the latest annotated frame)
//
// A machine-vision camera (aravis://) goes into torchinfer as it comes
// (Bayer, GRAY8, GRAY16_LE: no conversion at full resolution), and is not
// drawn on in the pipeline: the snapshot demosaics the latest frame and
// draws its boxes only when asked for (server/jpeg_snapshot.h):
//   appsrc (AravisSource) ! torchinfer ! torchnms [! ...] ! appsink
//
// With "restream": true the appsink also hands each annotated frame to the
// camera's RestreamFeed (restream.h), which encodes only while an RTSP
// client watches and never holds up this pipeline.
//
// source: file:// filesrc ! decodebin (looped with segment seeks, or once),
// v4l2:// v4l2src, rtsp:// an appsrc fed by rtsp::ReconnectingSource,
// aravis:// an appsrc fed by AravisSource (aravis_source.h says why not
// aravissrc).
// Every element is made and set by property: nothing from a request is ever
// parsed as a launch description.
//
// Threads: construction, start(), bus messages and stop requests run on the
// main loop; frames arrive on streaming threads (guarded by mu_). The
// pipeline's state changes never run on the main loop: a source's open()
// may block (a file that turned into a FIFO, a slow device), and the API,
// /healthz and SIGTERM must still answer. Going to PLAYING runs on
// GStreamer's thread pool and reports back through the bus; stopping runs
// on the server's stopper thread (shutdown()).
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aravis_source.h"
#include "camera_codes.h"
#include "camera_evidence.h"
#include "camera_parts.h"
#include "restream.h"
#include "rtsp_source.h"
#include "server/core/metrics_text.h"
#include "server/core/server_config.h"
#include "server/core/stream_health.h"

namespace torchinfer::server {

class Camera {
 public:
  // `restream`: the camera's RTSP mount, or null when re-stream is off.
  Camera(StreamSpec spec, ModelSpec model, std::string output_dir, MqttSpec mqtt,
         std::shared_ptr<RestreamFeed> restream = nullptr);
  ~Camera();
  Camera(const Camera&) = delete;
  Camera& operator=(const Camera&) = delete;

  const StreamSpec& spec() const { return spec_; }
  // "evidence" cameras, before start(): the camera's evidence, or null with
  // why its folder cannot be used (the camera then fails with that reason).
  void set_evidence(std::shared_ptr<CameraEvidence> ev, std::string why) {
    evidence_ = std::move(ev);
    evidence_error_ = std::move(why);
  }
  const std::shared_ptr<CameraEvidence>& evidence() const { return evidence_; }
  // "parts" with a classifier, before start(): that model (camera_parts.h).
  void set_classifier(ModelSpec m) { classifier_ = std::move(m); }
  const std::shared_ptr<RestreamFeed>& restream() const { return restream_; }

  // Builds the pipeline and asks for PLAYING off the main loop; returns at
  // once. False (with the reason in the camera's health, state failed) when
  // it cannot even be built; a failure to start shows up later the same way.
  bool start();
  // Ends the stream: EOS in, so the JSON and MQTT outputs get every frame
  // already captured. Returns at once; drained() turns true at the EOS.
  void begin_drain();
  bool drained() const { return drained_.load() || eos_refused_->load(); }
  // Takes the pipeline away from the main loop (no more bus handling, the
  // RTSP source stopped) so shutdown() can run on another thread.
  void detach();
  // EOS (if not yet), waits up to `timeout_s` for it, then NULL. Any thread,
  // after detach().
  void shutdown(double timeout_s);

  // Frames inferred so far (torchinfer's counter), for the model's total.
  std::uint64_t frames_inferred() const;
  StreamFigures figures() const;
  nlohmann::json status() const;
  // The latest annotated frame as JPEG; empty if none yet.
  std::vector<std::uint8_t> snapshot_jpeg(std::string* why) const;
  // PUT /streams/{id}/analytics: new lines and zones on the running
  // pipeline (camera_analytics.h). The HTTP status: 200, 409 (no tracking,
  // so no torchanalytics), 500 (the layout cannot be written); *why if not 200.
  int set_analytics(const AnalyticsConfig& layout, std::string* why);
  // {"id", "lines", "zones", "analytics": counts}.
  nlohmann::json analytics_status() const;
  // One software trigger; the HTTP status (202 queued, 409 not a camera in
  // software-trigger mode, 503 camera not acquiring) and, if not 202, why.
  int trigger(std::string* why);

 private:
  static gboolean on_bus(GstBus* bus, GstMessage* msg, gpointer user);
  static GstFlowReturn on_sample(GstAppSink* sink, gpointer user);
  static GstPadProbeReturn before_loop(GstPad* pad, GstPadProbeInfo* info, gpointer user);
  static void on_pad_added(GstElement* decodebin, GstPad* pad, gpointer user);
  // The pipeline's elements besides the members below (build()'s, owned by
  // the bin).
  struct Elements {
    GstElement *source = nullptr, *decode = nullptr, *caps = nullptr, *tee = nullptr,
               *nms = nullptr, *track = nullptr, *meta = nullptr, *publish = nullptr,
               *overlay = nullptr, *sink = nullptr;
  };
  bool build(std::string* why);
  GstElement* make_source(GstElement** decode, std::string* why);
  bool make_elements(Elements& e, std::string* why);
  void configure(const Elements& e);
  bool make_chain(const Elements& e, std::vector<GstElement*>& chain, std::string* why);
  bool link_source(const Elements& e, GstElement* first, std::string* why);
  bool attach_feeder(GstElement* source, std::string* why);
  GstElement* make(const char* factory, const char* name, std::string* why);
  void read_mqtt_counters(StreamFigures& f) const;
  void handle_message(GstMessage* msg);
  void handle_app_message(const GstStructure* s);
  void handle_camera_message(const GstStructure* s);
  nlohmann::json camera_status(const StreamFigures& f) const;
  void fail(const std::string& message);
  void take_sample(GstSample* sample);
  void release_latest();
  bool send_eos();
  static bool send_eos_to(GstElement* target);  // appsrc, or videoconvert's sink pad
  void play_async();
  StreamSpec spec_with(const AnalyticsConfig& layout) const;
  std::string layout_path() const;

  const StreamSpec spec_;
  const ModelSpec model_;
  const std::string output_dir_;
  const MqttSpec mqtt_;
  const std::shared_ptr<RestreamFeed> restream_;
  std::shared_ptr<CameraEvidence> evidence_;
  std::string evidence_error_;
  ModelSpec classifier_;                // "parts": the part classifier, if any
  std::unique_ptr<CameraParts> parts_;  // "parts" (and "plc"), from build()
  std::unique_ptr<CameraCodes> codes_;  // "codes", from build()
  GstElement* pipeline_ = nullptr;
  GstElement* infer_ = nullptr;      // owned by the pipeline
  GstElement* analytics_ = nullptr;  // torchanalytics ("track": true), a reference of ours
  GstElement* convert_ = nullptr;    // decodebin links its pad here
  GstAppSrc* appsrc_ = nullptr;      // rtsp:// and aravis://
  std::unique_ptr<rtsp::ReconnectingSource> rtsp_;
  std::shared_ptr<AravisSource> aravis_;  // shared with its thread (aravis_source.h)
  guint bus_watch_ = 0;
  std::atomic<bool> seeked_{false};  // the first segment seek of a looped file is asked for
  std::atomic<bool> drained_{false}, draining_{false}, detached_{false}, stopped_{false};
  // Set by begin_drain()'s EOS, sent off the main loop, when it cannot go in.
  std::shared_ptr<std::atomic<bool>> eos_refused_ = std::make_shared<std::atomic<bool>>(false);
  // Shared with the asynchronous start, which may run after this camera is
  // gone: it must not start a pipeline that shutdown() has stopped.
  struct StartGate {
    std::mutex mu;
    bool closed = false;
  };
  std::shared_ptr<StartGate> start_gate_ = std::make_shared<StartGate>();

  std::mutex layout_mu_;   // set_analytics: the layout file
  mutable std::mutex mu_;  // everything below
  StreamHealth health_;
  LatencyWindow latency_;
  std::map<std::string, std::uint64_t> detections_;
  std::uint64_t frames_out_ = 0;
  nlohmann::json last_result_;  // the latest inferred frame's detections
  GstSample* latest_ = nullptr;
  AnalyticsConfig layout_;  // the lines and zones in use (spec_'s until a PUT)
};

}  // namespace torchinfer::server
