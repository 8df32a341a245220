// Serves an annotated stream over RTSP: by default a live test pattern,
// classified by torchinfer, labelled by torchoverlay, encoded to H.264
// (built element by element with the apps' builder, app/builder.h).
// --pipeline serves any launch description whose payloader is named pay0.
//
// Exit codes: 0 stopped by SIGINT/SIGTERM; 1 cannot listen on the address;
// 2 bad command line (options, --pipeline, missing model).
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/rtsp-server/rtsp-server.h>

#include <cstdio>
#include <string>

#include "app/app_numbers.h"
#include "app/app_options.h"
#include "app/builder.h"

namespace app = torchinfer::app;

namespace {

struct Options {
  std::string address = "127.0.0.1", mount = "/stream", model = "models/demo/parts_classifier.pt",
              pipeline;
  int port = 8554, width = 320, height = 240, fps = 15;
};

bool parse_args(int argc, char** argv, Options& o) {
  gchar *address = nullptr, *mount = nullptr, *model = nullptr, *pipeline = nullptr;
  GOptionEntry entries[] = {
      {"port", 'p', 0, G_OPTION_ARG_INT, &o.port, "TCP port (default 8554; 0 = any free one)",
       "PORT"},
      {"address", 0, 0, G_OPTION_ARG_STRING, &address,
       "Address to listen on (default 127.0.0.1; 0.0.0.0 = every interface)", "ADDR"},
      {"mount", 0, 0, G_OPTION_ARG_STRING, &mount, "Mount point (default /stream)", "PATH"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "Classifier for the default pipeline (default models/demo/parts_classifier.pt)", "FILE"},
      {"pipeline", 0, 0, G_OPTION_ARG_STRING, &pipeline,
       "Launch description to serve; its RTP payloader must be named pay0", "LAUNCH"},
      {"width", 0, 0, G_OPTION_ARG_INT, &o.width, "Default pipeline: frame width (320)", "W"},
      {"height", 0, 0, G_OPTION_ARG_INT, &o.height, "Default pipeline: frame height (240)", "H"},
      {"fps", 0, 0, G_OPTION_ARG_INT, &o.fps, "Default pipeline: frames per second (15)", "N"},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  const bool ok =
      app::parse_options(&argc, &argv, entries, "- serve an annotated stream over RTSP", "error: ");
  app::take(address, o.address);
  app::take(mount, o.mount);
  app::take(model, o.model);
  app::take(pipeline, o.pipeline);
  if (!ok) return false;
  if (!app::check_range("--port", o.port, 0LL, 65535LL) ||
      !app::check_range("--width", o.width, 16LL, 8192LL) ||
      !app::check_range("--height", o.height, 16LL, 8192LL) ||
      !app::check_range("--fps", o.fps, 1LL, 1000LL))
    return false;
  if (o.mount.empty() || o.mount[0] != '/') {
    g_printerr("error: --mount '%s' must start with '/'\n", o.mount.c_str());
    return false;
  }
  return true;
}

// The default analysis, element by element (the model path is a value,
// never launch syntax): a live test pattern classified by torchinfer,
// labelled by torchoverlay, H.264, payloaded as pay0. A floating bin, or
// nullptr with *why.
GstElement* default_bin(const Options& o, std::string* why) {
  GstElement* bin = gst_bin_new(nullptr);
  app::Builder b(bin, why);
  GstElement* src = b.add("videotestsrc");
  GstElement* raw = b.add("capsfilter");
  GstElement* infer = b.add("torchinfer");
  GstElement* overlay = b.add("torchoverlay");
  GstElement* enc = b.add("openh264enc");
  GstElement* pay = b.add("rtph264pay", "pay0");
  if (!b.failed()) {
    g_object_set(src, "is-live", TRUE, nullptr);
    app::set_arg(src, "pattern", "ball");
    GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "I420", "width",
                                        G_TYPE_INT, o.width, "height", G_TYPE_INT, o.height,
                                        "framerate", GST_TYPE_FRACTION, o.fps, 1, nullptr);
    g_object_set(raw, "caps", caps, nullptr);
    gst_caps_unref(caps);
    g_object_set(infer, "model", o.model.c_str(), nullptr);
    // A key frame every second: a client that (re)joins decodes within 1 s.
    app::set_arg(enc, "gop-size", std::to_string(o.fps));
    app::set_arg(pay, "pt", "96");
    app::set_arg(pay, "config-interval", "-1");
    b.link({src, raw, infer, overlay, enc, pay});
  }
  if (!b.failed()) return bin;
  gst_object_unref(gst_object_ref_sink(bin));
  return nullptr;
}

// gst-rtsp-server asks this factory for each media's element: the default
// bin, built from the options instead of parsed from a launch string.
struct DefaultFactory {
  GstRTSPMediaFactory parent;
  const Options* options;
};
struct DefaultFactoryClass {
  GstRTSPMediaFactoryClass parent;
};
G_DEFINE_TYPE(DefaultFactory, default_factory, GST_TYPE_RTSP_MEDIA_FACTORY)

GstElement* default_factory_create_element(GstRTSPMediaFactory* factory, const GstRTSPUrl*) {
  std::string why;
  GstElement* bin = default_bin(*reinterpret_cast<DefaultFactory*>(factory)->options, &why);
  if (!bin) g_printerr("server: cannot build the stream: %s\n", why.c_str());
  return bin;
}

void default_factory_class_init(DefaultFactoryClass* klass) {
  GST_RTSP_MEDIA_FACTORY_CLASS(klass)->create_element = default_factory_create_element;
}

void default_factory_init(DefaultFactory*) {}

// Parses the description once, so a typo is reported now and not at the
// first client's DESCRIBE.
bool check_pipeline(const std::string& desc) {
  GError* err = nullptr;
  GstElement* bin = gst_parse_bin_from_description_full(desc.c_str(), FALSE, nullptr,
                                                        GST_PARSE_FLAG_FATAL_ERRORS, &err);
  if (!bin) {
    g_printerr("error: bad --pipeline '%s': %s\n", desc.c_str(),
               err ? err->message : "unknown error");
    g_clear_error(&err);
    return false;
  }
  GstElement* pay = gst_bin_get_by_name(GST_BIN(bin), "pay0");
  if (!pay)
    g_printerr(
        "error: --pipeline needs an RTP payloader named pay0 (e.g. ... ! rtph264pay "
        "name=pay0 pt=96)\n");
  else
    gst_object_unref(pay);
  gst_object_unref(bin);
  return pay != nullptr;
}

// The media's own bus watch belongs to gst-rtsp-server; a sync handler only
// looks, so a model that fails to load is reported here instead of a bare 503.
GstBusSyncReply report_errors(GstBus*, GstMessage* msg, gpointer) {
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    g_printerr("server: stream error from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)),
               err ? err->message : "unknown");
    g_clear_error(&err);
  }
  return GST_BUS_PASS;
}

void on_media_configure(GstRTSPMediaFactory*, GstRTSPMedia* media, gpointer) {
  GstElement* element = gst_rtsp_media_get_element(media);
  GstObject* pipeline = gst_object_get_parent(GST_OBJECT(element));
  if (pipeline && GST_IS_PIPELINE(pipeline)) {
    GstBus* bus = gst_pipeline_get_bus(GST_PIPELINE(pipeline));
    gst_bus_set_sync_handler(bus, report_errors, nullptr, nullptr);
    gst_object_unref(bus);
  }
  if (pipeline) gst_object_unref(pipeline);
  gst_object_unref(element);
  g_printerr("server: new media for a client\n");
}

GstRTSPFilterResult remove_client(GstRTSPServer*, GstRTSPClient*, gpointer) {
  return GST_RTSP_FILTER_REMOVE;
}

gboolean on_signal(gpointer loop) {
  g_main_loop_quit(static_cast<GMainLoop*>(loop));
  return G_SOURCE_CONTINUE;
}

// --pipeline's description (checked now), or the default analysis (built
// once now, so a missing element is reported before the first client).
// Null after saying why.
GstRTSPMediaFactory* make_factory(const Options& opt) {
  if (!opt.pipeline.empty()) {
    if (!check_pipeline(opt.pipeline)) return nullptr;
    GstRTSPMediaFactory* factory = gst_rtsp_media_factory_new();
    gst_rtsp_media_factory_set_launch(factory, ("( " + opt.pipeline + " )").c_str());
    return factory;
  }
  std::string why;
  GstElement* probe = default_bin(opt, &why);
  if (!probe) {
    g_printerr("error: %s\n", why.c_str());
    return nullptr;
  }
  gst_object_unref(gst_object_ref_sink(probe));
  auto* factory = static_cast<DefaultFactory*>(g_object_new(default_factory_get_type(), nullptr));
  factory->options = &opt;
  return GST_RTSP_MEDIA_FACTORY(factory);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_args(argc, argv, opt)) return 2;
  gst_init(nullptr, nullptr);
  const bool custom = !opt.pipeline.empty();
  if (!custom && !g_file_test(opt.model.c_str(), G_FILE_TEST_IS_REGULAR)) {
    g_printerr("error: model '%s' not found\n", opt.model.c_str());
    return 2;
  }
  GstRTSPMediaFactory* factory = make_factory(opt);
  if (!factory) return 2;

  GstRTSPServer* server = gst_rtsp_server_new();
  gst_rtsp_server_set_address(server, opt.address.c_str());
  gst_rtsp_server_set_service(server, std::to_string(opt.port).c_str());
  GstRTSPMountPoints* mounts = gst_rtsp_server_get_mount_points(server);
  // One pipeline (one model, one encoder) however many clients watch.
  gst_rtsp_media_factory_set_shared(factory, TRUE);
  g_signal_connect(factory, "media-configure", G_CALLBACK(on_media_configure), nullptr);
  gst_rtsp_mount_points_add_factory(mounts, opt.mount.c_str(), factory);
  g_object_unref(mounts);

  const guint watch = gst_rtsp_server_attach(server, nullptr);
  if (watch == 0) {
    g_printerr("error: cannot listen on %s:%d\n", opt.address.c_str(), opt.port);
    g_object_unref(server);
    return 1;
  }
  g_print("serving rtsp://%s:%d%s\n", opt.address.c_str(), gst_rtsp_server_get_bound_port(server),
          opt.mount.c_str());
  fflush(stdout);  // read by scripts through a pipe
  GMainLoop* loop = g_main_loop_new(nullptr, FALSE);
  g_unix_signal_add(SIGINT, on_signal, loop);
  g_unix_signal_add(SIGTERM, on_signal, loop);
  g_main_loop_run(loop);

  // Close every session (their media pipelines stop with them), then stop listening.
  gst_rtsp_server_client_filter(server, remove_client, nullptr);
  g_source_remove(watch);
  g_object_unref(server);
  g_main_loop_unref(loop);
  g_printerr("server: stopped\n");
  return 0;
}
