#include "rtsp_source.h"

#include <algorithm>
#include <cstring>

namespace rtsp {

namespace {

double seconds(gint64 us) {
  return us / 1e6;
}

}  // namespace

// One source pipeline's identity: its frames count only while it is current.
struct ReconnectingSource::Attempt {
  ReconnectingSource* self;
  int generation;
};

ReconnectingSource::ReconnectingSource(SourceOptions opt, GstAppSrc* appsrc)
    : opt_(std::move(opt)),
      appsrc_(GST_APP_SRC(gst_object_ref(appsrc))),
      backoff_s_(opt_.backoff_min_s) {}

ReconnectingSource::~ReconnectingSource() {
  stop();
  if (caps_) gst_caps_unref(caps_);
  gst_object_unref(appsrc_);
}

GstElement* ReconnectingSource::build(std::string* error) const {
  const std::string desc = "rtspsrc name=src ! " + opt_.decode +
                           " ! appsink name=sink sync=false max-buffers=2 drop=true";
  GError* err = nullptr;
  GstElement* p = gst_parse_launch_full(desc.c_str(), nullptr, GST_PARSE_FLAG_FATAL_ERRORS, &err);
  if (!p) {
    *error = std::string("bad decode description '") + opt_.decode +
             "': " + (err ? err->message : "unknown error");
    g_clear_error(&err);
    return nullptr;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(p), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  bool ok = src && sink && GST_IS_APP_SINK(sink);
  if (!ok) *error = "the decode description must not name elements 'src' or 'sink'";
  if (ok && !gst_uri_handler_set_uri(GST_URI_HANDLER(src), opt_.url.c_str(), &err)) {
    *error = "not an RTSP URL: '" + opt_.url + "' (" + (err ? err->message : "rejected") + ")";
    g_clear_error(&err);
    ok = false;
  }
  if (ok) {
    // rtspsrc's own blocking requests give up no later than the watchdog.
    g_object_set(src, "latency", static_cast<guint>(opt_.latency_ms), "tcp-timeout",
                 static_cast<guint64>(opt_.stall_timeout_s * 1e6), nullptr);
    gst_util_set_object_arg(G_OBJECT(src), "protocols", opt_.protocols.c_str());
  }
  if (src) gst_object_unref(src);
  if (sink) gst_object_unref(sink);
  if (!ok) {
    gst_object_unref(p);
    return nullptr;
  }
  return p;
}

bool ReconnectingSource::validate(std::string* error) const {
  GstElement* p = build(error);
  if (!p) return false;
  gst_object_unref(p);
  return true;
}

void ReconnectingSource::start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_us_ = g_get_monotonic_time();
  }
  reaper_ = std::thread([this] { reap(); });
  tick_ = g_timeout_add(100, on_tick, this);
  connect();
}

void ReconnectingSource::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
  }
  if (tick_) g_source_remove(tick_);
  if (retry_) g_source_remove(retry_);
  tick_ = retry_ = 0;
  retire();
  if (reaper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(reap_mu_);
      reap_stop_ = true;
    }
    reap_cv_.notify_one();
    reaper_.join();
  }
}

SourceCounters ReconnectingSource::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void ReconnectingSource::post(GstStructure* s) {
  gst_structure_set(s, "url", G_TYPE_STRING, opt_.url.c_str(), nullptr);
  gst_element_post_message(GST_ELEMENT(appsrc_),
                           gst_message_new_application(GST_OBJECT(appsrc_), s));
}

void ReconnectingSource::connect() {
  std::string error;
  GstElement* p = build(&error);
  int attempt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempt = ++counts_.attempts;
  }
  attempt_started_us_ = g_get_monotonic_time();
  post(gst_structure_new("torchinfer-rtsp-connecting", "attempt", G_TYPE_INT, attempt, nullptr));
  if (!p) {
    lose("error: " + error);
    return;
  }
  pipeline_ = p;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  GstAppSinkCallbacks cb = {};
  cb.new_sample = on_sample;
  gst_app_sink_set_callbacks(GST_APP_SINK(sink), &cb, new Attempt{this, generation_.load()},
                             [](gpointer a) { delete static_cast<Attempt*>(a); });
  gst_object_unref(sink);
  GstBus* bus = gst_element_get_bus(p);
  bus_watch_ = gst_bus_add_watch(bus, on_bus, this);
  gst_object_unref(bus);
  if (gst_element_set_state(p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    lose("error: the source pipeline cannot start");
}

void ReconnectingSource::lose(const std::string& reason) {
  double delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    counts_.losses++;
    counts_.streaming = false;
    outage_ = true;
    delay = backoff_s_;
    backoff_s_ = std::min(backoff_s_ * 2, opt_.backoff_max_s);
  }
  retire();
  post(gst_structure_new("torchinfer-rtsp-lost", "reason", G_TYPE_STRING, reason.c_str(), nullptr));
  post(gst_structure_new("torchinfer-rtsp-retry", "delay", G_TYPE_DOUBLE, delay, nullptr));
  if (retry_) g_source_remove(retry_);
  retry_ = g_timeout_add(static_cast<guint>(delay * 1000), on_retry, this);
}

// A source that lost its server can take up to tcp-timeout to shut down
// (rtspsrc tries to send TEARDOWN): do it on a thread of its own, never on
// the main context that runs the watchdog.
void ReconnectingSource::retire() {
  if (!pipeline_) return;
  generation_++;
  if (bus_watch_) g_source_remove(bus_watch_);
  bus_watch_ = 0;
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    dead_.push_back(pipeline_);
  }
  reap_cv_.notify_one();
  pipeline_ = nullptr;
}

void ReconnectingSource::reap() {
  std::unique_lock<std::mutex> lock(reap_mu_);
  for (;;) {
    reap_cv_.wait(lock, [this] { return reap_stop_ || !dead_.empty(); });
    if (dead_.empty()) return;  // stop requested and nothing left to shut down
    GstElement* p = dead_.front();
    dead_.pop_front();
    lock.unlock();
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(p);
    lock.lock();
  }
}

gboolean ReconnectingSource::on_bus(GstBus*, GstMessage* msg, gpointer user) {
  auto* self = static_cast<ReconnectingSource*>(user);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_error(msg, &err, &dbg);
    std::string text = err ? err->message : "unknown error";
    // rtspsrc's message is generic ("Could not open resource"); the last
    // line of its debug text says why (refused, 404, timeout).
    if (const char* why = dbg ? std::strrchr(dbg, '\n') : nullptr)
      if (why[1]) text += std::string(" (") + (why + 1) + ")";
    g_clear_error(&err);
    g_free(dbg);
    self->bus_watch_ = 0;  // lose() retires the pipeline; this watch ends here
    self->lose("error: " + text);
    return G_SOURCE_REMOVE;
  }
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
    self->bus_watch_ = 0;
    self->lose("end of stream");
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

gboolean ReconnectingSource::on_retry(gpointer user) {
  auto* self = static_cast<ReconnectingSource*>(user);
  self->retry_ = 0;
  self->connect();
  return G_SOURCE_REMOVE;
}

// The watchdog: reports a stall once per outage and restarts a source that
// has produced nothing for stall-timeout (a frozen server keeps its TCP
// connection open, so rtspsrc itself would wait on it).
gboolean ReconnectingSource::on_tick(gpointer user) {
  auto* self = static_cast<ReconnectingSource*>(user);
  const gint64 now = g_get_monotonic_time();
  const gint64 stall_us = static_cast<gint64>(self->opt_.stall_timeout_s * 1e6);
  bool report = false, restart = false;
  double gap;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    const gint64 since_us = now - (self->last_frame_us_ ? self->last_frame_us_ : self->started_us_);
    gap = seconds(since_us);
    if (!self->stall_reported_ && since_us >= stall_us) {
      self->stall_reported_ = true;
      self->counts_.stalls++;
      report = true;
    }
    restart = self->pipeline_ &&
              now - std::max(self->attempt_started_us_, self->last_frame_us_) >= stall_us;
  }
  if (report)
    self->post(
        gst_structure_new("torchinfer-rtsp-stalled", "seconds", G_TYPE_DOUBLE, gap, nullptr));
  if (restart) self->lose("no frames");
  return G_SOURCE_CONTINUE;
}

GstFlowReturn ReconnectingSource::on_sample(GstAppSink* sink, gpointer user) {
  auto* a = static_cast<Attempt*>(user);
  GstSample* sample = gst_app_sink_pull_sample(sink);
  if (!sample) return GST_FLOW_EOS;
  if (a->generation == a->self->generation_.load()) a->self->handle_frame(sample);
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

void ReconnectingSource::handle_frame(GstSample* sample) {
  GstCaps* caps = gst_sample_get_caps(sample);
  GstBuffer* in = gst_sample_get_buffer(sample);
  if (!caps || !in) return;
  bool resumed, first, new_caps = false, last = false;
  double gap;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_ || (opt_.max_frames > 0 && counts_.frames >= opt_.max_frames)) return;
    const gint64 now = g_get_monotonic_time();
    gap = seconds(now - (last_frame_us_ ? last_frame_us_ : started_us_));
    resumed = outage_;
    first = first_;
    outage_ = first_ = stall_reported_ = false;
    last_frame_us_ = now;
    counts_.streaming = true;
    last = ++counts_.frames == opt_.max_frames;
    if (resumed) backoff_s_ = opt_.backoff_min_s;
    if (!caps_ || !gst_caps_is_equal(caps, caps_)) {
      gst_caps_replace(&caps_, caps);
      new_caps = true;
    }
  }
  if (resumed)
    post(gst_structure_new("torchinfer-rtsp-resumed", "seconds", G_TYPE_DOUBLE, gap, "first",
                           G_TYPE_BOOLEAN, first, nullptr));
  // A camera may come back at another size: appsrc forwards the new caps in
  // order with the frames, and torchinfer follows a caps change mid-stream.
  if (new_caps) gst_app_src_set_caps(appsrc_, caps);
  // The server's timestamps restart with every session: restamp with the
  // analysis pipeline's running time (a shallow copy, pixels are shared).
  GstBuffer* out = gst_buffer_copy(in);
  GST_BUFFER_DTS(out) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_PTS(out) = GST_CLOCK_TIME_NONE;
  if (GstClock* clock = gst_element_get_clock(GST_ELEMENT(appsrc_))) {
    const GstClockTime now = gst_clock_get_time(clock);
    const GstClockTime base = gst_element_get_base_time(GST_ELEMENT(appsrc_));
    if (now >= base) GST_BUFFER_PTS(out) = now - base;
    gst_object_unref(clock);
  }
  gst_app_src_push_buffer(appsrc_, out);
  if (last) gst_app_src_end_of_stream(appsrc_);
}

}  // namespace rtsp
