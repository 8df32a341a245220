// Analyses an RTSP stream and keeps doing so when the server goes away:
//   rtspsrc ! depay ! parse ! decode ! appsink   (rebuilt on every reconnect)
//   appsrc ! torchinfer ! [torchnms] ! torchmetaconvert ! fakesink   (lives for the whole run)
// One JSON line per frame on stdout (or --output); status lines on stderr.
//
// Exit codes: 0 --max-frames reached, or --duration / SIGINT / SIGTERM while
// frames were arriving; 1 the analysis pipeline failed (e.g. the model does
// not load); 2 bad command line (options, URL, --decode, --analysis);
// 3 stopped without a single frame ever arriving; 4 stopped while the stream
// was down (frames had arrived earlier).
#include <glib-unix.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app/app_numbers.h"
#include "app/app_options.h"
#include "app/builder.h"
#include "rtsp_source.h"

namespace app = torchinfer::app;

namespace {

struct Options {
  rtsp::SourceOptions source;
  std::string model = "models/demo/parts_classifier.pt", analysis, output;
  bool nms = false;
  double duration_s = 0;
};

struct App {
  GMainLoop* loop = nullptr;
  GstElement* pipeline = nullptr;
  GstAppSrc* appsrc = nullptr;
  rtsp::ReconnectingSource* source = nullptr;
  int rc = 0;
  bool draining = false;
};

// The URL (--url or the first argument left) and every number within its
// range.
bool check_args(int argc, char** argv, Options& o) {
  if (o.source.url.empty() && argc > 1) o.source.url = argv[1];
  if (o.source.url.empty()) {
    g_printerr("usage: torchinfer-rtsp-client --url rtsp://HOST:PORT/MOUNT [options]\n");
    return false;
  }
  // A day bounds every duration: larger values are typos, and a timeout
  // that overflows the clock arithmetic would never fire.
  constexpr double kDay = 86400;
  const rtsp::SourceOptions& so = o.source;
  return app::check_range("--stall-timeout", so.stall_timeout_s, 0.001, kDay) &&
         app::check_range("--max-backoff", so.backoff_max_s, so.backoff_min_s, kDay) &&
         app::check_range("--latency", static_cast<long long>(so.latency_ms), 0LL, 60000LL) &&
         app::check_range("--max-frames", static_cast<long long>(so.max_frames), 0LL,
                          static_cast<long long>(G_MAXINT64)) &&
         app::check_range("--duration", o.duration_s, 0.0, 365 * kDay);
}

bool parse_args(int argc, char** argv, Options& o) {
  gchar *url = nullptr, *model = nullptr, *analysis = nullptr, *output = nullptr, *decode = nullptr,
        *protocols = nullptr;
  gboolean nms = FALSE;
  gint latency = o.source.latency_ms;
  gint64 max_frames = 0;
  gdouble stall = o.source.stall_timeout_s, backoff = o.source.backoff_max_s, duration = 0;
  GOptionEntry entries[] = {
      {"url", 'u', 0, G_OPTION_ARG_STRING, &url, "rtsp://host:port/mount to analyse", "URL"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "TorchScript model (default models/demo/parts_classifier.pt)", "FILE"},
      {"nms", 0, 0, G_OPTION_ARG_NONE, &nms, "Add torchnms after torchinfer (detection models)",
       nullptr},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "JSON lines file (default stdout)",
       "FILE"},
      {"analysis", 'a', 0, G_OPTION_ARG_STRING, &analysis,
       "Launch description fed by the decoded frames, replacing --model/--nms/--output",
       "\"torchinfer ... ! sink\""},
      {"decode", 0, 0, G_OPTION_ARG_STRING, &decode,
       "Launch description from RTP to raw video (default rtph264depay ! h264parse ! openh264dec)",
       "LAUNCH"},
      {"latency", 0, 0, G_OPTION_ARG_INT, &latency, "rtspsrc jitter buffer, ms (default 200)",
       "MS"},
      {"protocols", 0, 0, G_OPTION_ARG_STRING, &protocols,
       "RTP transports: tcp (default), udp, udp+tcp", "P"},
      {"stall-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &stall,
       "Watchdog: no decoded frame for this long is a stall (default 5 s)", "S"},
      {"max-backoff", 0, 0, G_OPTION_ARG_DOUBLE, &backoff,
       "Longest wait between reconnects; waits start at 0.5 s and double (default 5 s)", "S"},
      {"max-frames", 'n', 0, G_OPTION_ARG_INT64, &max_frames, "Stop after N frames", "N"},
      {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &duration, "Stop after S seconds", "S"},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  const bool ok = app::parse_options(&argc, &argv, entries,
                                     "- analyse an RTSP stream, reconnecting", "error: ");
  app::take(url, o.source.url);
  app::take(model, o.model);
  app::take(analysis, o.analysis);
  app::take(output, o.output);
  app::take(decode, o.source.decode);
  app::take(protocols, o.source.protocols);
  o.nms = nms;
  o.source.latency_ms = latency;
  o.source.stall_timeout_s = stall;
  o.source.backoff_max_s = backoff;
  o.source.max_frames = max_frames;
  o.duration_s = duration;
  return ok && check_args(argc, argv, o);
}

// The stream enters at an appsrc named "rtspin" (ReconnectingSource feeds
// it). --analysis is the user's own launch syntax; the default analysis is
// built element by element, so a model path is only a value.
constexpr const char* kAppSrc =
    "appsrc name=rtspin format=time is-live=true max-buffers=30 leaky-type=downstream";

GstElement* default_analysis(const Options& o, std::string* why) {
  GstElement* pipeline = torchinfer::app::new_pipeline("rtsp-client");
  torchinfer::app::Builder b(pipeline, why);
  GstElement* in = b.add("appsrc", "rtspin");
  GstElement* infer = b.add("torchinfer");
  GstElement* nms = o.nms ? b.add("torchnms") : nullptr;
  GstElement* json = b.add("torchmetaconvert");
  GstElement* sink = b.add("fakesink");
  if (!b.failed()) {
    g_object_set(in, "format", GST_FORMAT_TIME, "is-live", TRUE, "max-buffers", 30, nullptr);
    torchinfer::app::set_arg(in, "leaky-type", "downstream");
    g_object_set(infer, "model", o.model.c_str(), nullptr);
    if (!o.output.empty()) g_object_set(json, "location", o.output.c_str(), nullptr);
    g_object_set(sink, "sync", FALSE, nullptr);
    std::vector<GstElement*> chain = {in, infer};
    if (nms) chain.push_back(nms);
    chain.insert(chain.end(), {json, sink});
    b.link(chain);
  }
  if (b.failed()) {
    gst_object_unref(pipeline);
    return nullptr;
  }
  return pipeline;
}

GstElement* build_pipeline(const Options& o) {
  std::string why;
  if (o.analysis.empty()) {
    GstElement* p = default_analysis(o, &why);
    if (!p) g_printerr("error: cannot build the analysis: %s\n", why.c_str());
    return p;
  }
  const std::string desc = std::string(kAppSrc) + " ! " + o.analysis;
  GError* err = nullptr;
  GstElement* p = gst_parse_launch_full(desc.c_str(), nullptr, GST_PARSE_FLAG_FATAL_ERRORS, &err);
  if (!p)
    g_printerr("error: bad analysis description '%s': %s\n", desc.c_str(),
               err ? err->message : "unknown error");
  g_clear_error(&err);
  return p;
}

void print_status(const GstStructure* s) {
  const char* name = gst_structure_get_name(s);
  const char* url = gst_structure_get_string(s, "url");
  double sec = 0;
  gst_structure_get_double(s, "seconds", &sec);
  if (g_str_equal(name, "torchinfer-rtsp-connecting")) {
    int attempt = 0;
    gst_structure_get_int(s, "attempt", &attempt);
    g_printerr("rtsp: connecting to %s (attempt %d)\n", url, attempt);
  } else if (g_str_equal(name, "torchinfer-rtsp-lost")) {
    g_printerr("rtsp: lost %s: %s\n", url, gst_structure_get_string(s, "reason"));
  } else if (g_str_equal(name, "torchinfer-rtsp-retry")) {
    double delay = 0;
    gst_structure_get_double(s, "delay", &delay);
    g_printerr("rtsp: reconnecting in %.1f s\n", delay);
  } else if (g_str_equal(name, "torchinfer-rtsp-stalled")) {
    g_printerr("watchdog: no frames from %s for %.1f s\n", url, sec);
  } else if (g_str_equal(name, "torchinfer-rtsp-resumed")) {
    gboolean first = FALSE;
    gst_structure_get_boolean(s, "first", &first);
    if (first)
      g_printerr("rtsp: streaming from %s, first frame after %.2f s\n", url, sec);
    else
      g_printerr("watchdog: frames from %s resumed after %.2f s\n", url, sec);
  }
}

// Stop taking frames and let the ones already inside reach the JSON.
void drain(App* app) {
  if (app->draining) return;
  app->draining = true;
  app->source->stop();
  gst_app_src_end_of_stream(app->appsrc);
  g_timeout_add_seconds(
      5,
      [](gpointer l) -> gboolean {
        g_main_loop_quit(static_cast<GMainLoop*>(l));
        return G_SOURCE_REMOVE;
      },
      app->loop);
}

gboolean on_bus(GstBus*, GstMessage* msg, gpointer user) {
  auto* app = static_cast<App*>(user);
  switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_APPLICATION:
      print_status(gst_message_get_structure(msg));
      break;
    case GST_MESSAGE_ERROR: {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      gst_message_parse_error(msg, &err, &dbg);
      g_printerr("error: analysis pipeline: %s\n", err->message);
      g_clear_error(&err);
      g_free(dbg);
      app->rc = 1;
      g_main_loop_quit(app->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      g_main_loop_quit(app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

gboolean on_stop(gpointer user) {
  drain(static_cast<App*>(user));
  return G_SOURCE_REMOVE;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_args(argc, argv, opt)) return 2;
  gst_init(nullptr, nullptr);

  GstElement* pipeline = build_pipeline(opt);
  if (!pipeline) return 2;
  GstElement* appsrc = gst_bin_get_by_name(GST_BIN(pipeline), "rtspin");
  rtsp::ReconnectingSource source(opt.source, GST_APP_SRC(appsrc));
  std::string why;
  if (!source.validate(&why)) {
    g_printerr("error: %s\n", why.c_str());
    gst_object_unref(appsrc);
    gst_object_unref(pipeline);
    return 2;
  }

  App app;
  app.loop = g_main_loop_new(nullptr, FALSE);
  app.pipeline = pipeline;
  app.appsrc = GST_APP_SRC(appsrc);
  app.source = &source;
  GstBus* bus = gst_element_get_bus(pipeline);
  // The model loads here, once, before the first connection.
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    GError* e = nullptr;
    if (m) gst_message_parse_error(m, &e, nullptr);
    g_printerr("error: analysis pipeline: %s\n", e ? e->message : "cannot start");
    g_clear_error(&e);
    if (m) gst_message_unref(m);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(bus);
    gst_object_unref(appsrc);
    gst_object_unref(pipeline);
    return 1;
  }
  gst_bus_add_watch(bus, on_bus, &app);
  g_unix_signal_add(SIGINT, on_stop, &app);
  g_unix_signal_add(SIGTERM, on_stop, &app);
  if (opt.duration_s > 0) g_timeout_add(static_cast<guint>(opt.duration_s * 1000), on_stop, &app);
  source.start();
  g_main_loop_run(app.loop);
  source.stop();
  gst_element_set_state(pipeline, GST_STATE_NULL);

  const rtsp::SourceCounters c = source.counters();
  g_printerr("rtsp: %" G_GINT64_FORMAT " frames, %d connection attempts, %d losses, %d stalls\n",
             c.frames, c.attempts, c.losses, c.stalls);
  int rc = app.rc;
  if (rc == 0 && !(opt.source.max_frames > 0 && c.frames >= opt.source.max_frames))
    rc = c.frames == 0 ? 3 : c.streaming ? 0 : 4;
  gst_bus_remove_watch(bus);
  gst_object_unref(bus);
  gst_object_unref(appsrc);
  gst_object_unref(pipeline);
  g_main_loop_unref(app.loop);
  return rc;
}
