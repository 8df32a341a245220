// An RTSP camera feed that survives its server: decoded frames go into an
// appsrc of a separate, long-lived analysis pipeline, while the source
// pipeline (rtspsrc ! depay ! parse ! decode ! appsink) is thrown away and
// rebuilt with back-off whenever it fails, ends or stops delivering frames.
// rtspsrc does not reconnect by itself; keeping the analysis pipeline apart
// keeps torchinfer's loaded model (seconds to load) across reconnects.
//
// Everything except the frame hand-off runs on the thread-default main
// context of the thread that calls start(). What happens is posted as
// application messages on the analysis pipeline's bus:
//   torchinfer-rtsp-connecting  url, attempt (int)
//   torchinfer-rtsp-lost        url, reason (string: "error: ...", "end of stream", "no frames")
//   torchinfer-rtsp-retry       url, delay (double, s)
//   torchinfer-rtsp-stalled     url, seconds (double): no frame for stall-timeout
//   torchinfer-rtsp-resumed     url, seconds (double): gap since the last frame
//                               (or since start for the first one), first (bool)
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace rtsp {

struct SourceOptions {
  std::string url;
  int latency_ms = 200;
  std::string protocols = "tcp";  // rtspsrc lower transports: tcp, udp, "udp+tcp", ...
  std::string decode = "rtph264depay ! h264parse ! openh264dec";
  double stall_timeout_s = 5.0;
  double backoff_min_s = 0.5, backoff_max_s = 5.0;
  std::int64_t max_frames = 0;  // > 0: end the appsrc's stream after this many frames
};

struct SourceCounters {
  std::int64_t frames = 0;
  int attempts = 0, losses = 0, stalls = 0;
  bool streaming = false;  // frames are arriving now
};

class ReconnectingSource {
 public:
  ReconnectingSource(SourceOptions opt, GstAppSrc* appsrc);
  ~ReconnectingSource();
  ReconnectingSource(const ReconnectingSource&) = delete;
  ReconnectingSource& operator=(const ReconnectingSource&) = delete;

  // Checks that the source description parses; false with a message if not.
  bool validate(std::string* error) const;
  // Connects now and keeps reconnecting until stop().
  void start();
  // Stops reconnecting and waits for every source pipeline to shut down.
  void stop();
  SourceCounters counters() const;

 private:
  struct Attempt;
  static GstFlowReturn on_sample(GstAppSink* sink, gpointer user);
  static gboolean on_bus(GstBus* bus, GstMessage* msg, gpointer user);
  static gboolean on_tick(gpointer user);
  static gboolean on_retry(gpointer user);

  GstElement* build(std::string* error) const;
  void connect();
  void lose(const std::string& reason);
  void retire();
  void reap();
  void post(GstStructure* s);
  void handle_frame(GstSample* sample);

  const SourceOptions opt_;
  GstAppSrc* appsrc_;
  GstElement* pipeline_ = nullptr;  // current source pipeline, main context only
  guint bus_watch_ = 0, tick_ = 0, retry_ = 0;
  std::atomic<int> generation_{0};  // frames of a retired pipeline are dropped
  gint64 attempt_started_us_ = 0;
  // Retired source pipelines, shut down one by one on the reaper thread.
  std::thread reaper_;
  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  std::deque<GstElement*> dead_;
  bool reap_stop_ = false;

  mutable std::mutex mu_;  // what the streaming thread and the main context share
  SourceCounters counts_;
  gint64 last_frame_us_ = 0, started_us_ = 0;
  bool stall_reported_ = false, outage_ = true, first_ = true, ended_ = false;
  double backoff_s_;
  GstCaps* caps_ = nullptr;
};

}  // namespace rtsp
