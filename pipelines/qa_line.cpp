// torchinfer-qa-line: a factory QA station. Camera (or clip) -> torchinfer ->
// torchnms -> part tracker -> one JSON decision per part (pass / reject /
// incomplete) and final counts. SIGINT/SIGTERM end the stream cleanly: EOS
// is sent into the pipeline, every frame already taken is analysed, open
// parts are decided, the counts printed, exit 0. Usage in pipelines/README.md.
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app_options.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "qa/decision_json.h"
#include "qa/part_tracker.h"

namespace app = torchinfer::app;

namespace {

struct Options {
  std::string clip, device, source, model = "models/demo/parts_detector.pt", output;
  std::string part_classes, defect_classes;
  double defect_threshold = 0.5, part_threshold = 0.5;
  int max_missed = 10;
  bool quiet = false;
};

struct App {
  Options opt;
  torchinfer::QaRules rules;
  std::unique_ptr<torchinfer::PartTracker> tracker;
  FILE* out = stdout;
  torchinfer::QaRunInfo info;
  GstElement* pipeline = nullptr;
  GMainLoop* loop = nullptr;
  int rc = 0;
  int signals = 0;
  // Set on the streaming thread when a decision could not be written: the
  // run stops and exits 1, since a lost pass/reject line is a lost decision.
  std::atomic<bool> write_failed{false};
  std::string write_error;
};

std::set<std::string> split_classes(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.insert(item);
  return out;
}

// The model's labels from its sidecar (a list, or a file beside it); empty if
// there is no sidecar, and then the classes given are taken on trust. A
// sidecar that exists but cannot be used throws, naming the file.
std::vector<std::string> model_labels(const std::string& model) {
  const auto dot = model.rfind('.');
  const std::string sidecar = (dot == std::string::npos ? model : model.substr(0, dot)) + ".json";
  struct stat st;
  std::vector<std::string> labels;
  if (::stat(sidecar.c_str(), &st) != 0) return labels;
  const auto j = torchinfer::read_json_file(sidecar, "model config");
  if (!j.is_object() || !j.contains("labels")) return labels;
  if (j["labels"].is_array()) {
    for (const auto& l : j["labels"])
      if (l.is_string()) labels.push_back(l.get<std::string>());
  } else if (j["labels"].is_string()) {
    const auto slash = sidecar.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : sidecar.substr(0, slash + 1);
    const std::string path = dir + j["labels"].get<std::string>();
    std::stringstream f(torchinfer::read_regular_file(path, "labels file", 4u << 20));
    for (std::string line; std::getline(f, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!torchinfer::is_valid_utf8(line))
        throw std::runtime_error("labels file '" + path + "' line " +
                                 std::to_string(labels.size() + 1) +
                                 " is not valid UTF-8; save the file as UTF-8");
      if (!line.empty()) labels.push_back(line);
    }
  }
  return labels;
}

// Flushed per line: a line is written when its part is decided, not when a
// buffer fills. A failure stops the run (see App::write_failed).
void write_line(App& app, const std::string& line) {
  if (app.write_failed) return;
  if (std::fputs(line.c_str(), app.out) < 0 || std::fputc('\n', app.out) == EOF ||
      std::fflush(app.out) != 0) {
    app.write_error = std::strerror(errno);
    app.write_failed = true;
    g_printerr("qa-line: error: cannot write decisions to %s: %s; stopping\n",
               app.opt.output.empty() ? "stdout" : app.opt.output.c_str(), app.write_error.c_str());
    // Through the bus: this runs on a streaming thread, possibly before the
    // main loop runs (a quit then would be lost).
    if (app.pipeline)
      gst_element_post_message(app.pipeline, gst_message_new_application(
                                                 GST_OBJECT(app.pipeline),
                                                 gst_structure_new_empty("qa-line-write-failed")));
  }
}

void report(App& app, const std::vector<torchinfer::QaDecision>& decisions) {
  for (const auto& d : decisions) {
    write_line(app, torchinfer::decision_json(d, app.rules.defect_threshold));
    if (app.opt.quiet) continue;
    std::string what;
    for (const auto& [label, c] : d.defects(app.rules.defect_threshold))
      what += (what.empty() ? " (" : ", ") + label + " " + std::to_string(c).substr(0, 4);
    if (!what.empty()) what += ")";
    g_printerr("qa-line: part %d %s %s%s, %.2f-%.2f s\n", d.part, d.label.c_str(),
               torchinfer::verdict_name(d.verdict), what.c_str(),
               d.first_pts < 0 ? 0.0 : d.first_pts / 1e9, d.last_pts < 0 ? 0.0 : d.last_pts / 1e9);
  }
}

// Runs on torchinfer's push thread, after torchnms attached the boxes. Only
// frames with a result of their own are evidence: reused results (inferred =
// FALSE) would count the same observation several times.
GstPadProbeReturn on_result(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* app = static_cast<App*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  const std::int64_t frame = app->info.frames++;
  GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(buf);
  if (!tm || !tm->inferred || tm->frame_width == 0 || tm->frame_height == 0)
    return GST_PAD_PROBE_OK;
  if (app->info.frames_inferred++ == 0)
    g_printerr("qa-line: analysing (first frame at %" GST_TIME_FORMAT ")\n",
               GST_TIME_ARGS(GST_BUFFER_PTS(buf)));
  std::vector<torchinfer::QaDetection> dets;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    GstTorchDetection d;
    if (!gst_torch_detection_from_roi(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), &d) ||
        !d.label)
      continue;
    const double w = tm->frame_width, h = tm->frame_height;
    dets.push_back({d.label, d.confidence, {d.x_min * w, d.y_min * h, d.x_max * w, d.y_max * h}});
  }
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  try {
    report(*app, app->tracker->add_frame(
                     dets, GST_CLOCK_TIME_IS_VALID(pts) ? static_cast<std::int64_t>(pts) : -1,
                     frame, static_cast<int>(tm->frame_width), static_cast<int>(tm->frame_height)));
  } catch (const std::exception& e) {
    g_printerr("qa-line: frame %" G_GINT64_FORMAT " not analysed: %s\n", frame, e.what());
  }
  return GST_PAD_PROBE_OK;
}

gboolean on_signal(gpointer user) {
  auto* app = static_cast<App*>(user);
  if (app->signals++ == 0) {
    // EOS from the sources drains torchinfer's batches, so the frames already
    // captured are still judged.
    g_printerr("qa-line: stopping: draining the pipeline (signal again to stop at once)\n");
    app->info.interrupted = true;
    gst_element_send_event(app->pipeline, gst_event_new_eos());
  } else {
    g_printerr("qa-line: stopping at once\n");
    g_main_loop_quit(app->loop);
  }
  return G_SOURCE_CONTINUE;
}

void print_error(GstMessage* msg) {
  GError* e = nullptr;
  gchar* dbg = nullptr;
  gst_message_parse_error(msg, &e, &dbg);
  g_printerr("qa-line: error from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), e->message);
  // GStreamer's message is often generic ("Resource not found."); the
  // details name the file or device.
  if (dbg) g_printerr("qa-line: details: %s\n", dbg);
  g_error_free(e);
  g_free(dbg);
}

gboolean on_bus(GstBus*, GstMessage* msg, gpointer user) {
  auto* app = static_cast<App*>(user);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    print_error(msg);
    app->rc = 1;
    g_main_loop_quit(app->loop);
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS ||
             GST_MESSAGE_TYPE(msg) == GST_MESSAGE_APPLICATION) {
    g_main_loop_quit(app->loop);
  }
  return G_SOURCE_CONTINUE;
}

bool parse_args(int argc, char** argv, Options& o) {
  gchar *clip = nullptr, *device = nullptr, *source = nullptr, *model = nullptr, *output = nullptr,
        *parts = nullptr, *defects = nullptr;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
      {"clip", 'c', 0, G_OPTION_ARG_FILENAME, &clip,
       "MJPEG Matroska clip, decoded to YUY2 as a camera sends it", "FILE"},
      {"device", 'd', 0, G_OPTION_ARG_FILENAME, &device, "V4L2 camera giving YUY2", "/dev/videoN"},
      {"source", 's', 0, G_OPTION_ARG_STRING, &source,
       "any launch fragment ending in raw video (instead of --clip/--device)", "LAUNCH"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "detector (default models/demo/parts_detector.pt)", "FILE"},
      {"defect-threshold", 't', 0, G_OPTION_ARG_DOUBLE, &o.defect_threshold,
       "reject a part when a defect reaches this confidence (default 0.5)", "0..1"},
      {"part-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &o.part_threshold,
       "least confidence of a part detection that is tracked (default 0.5)", "0..1"},
      {"max-missed", 0, 0, G_OPTION_ARG_INT, &o.max_missed,
       "analysed frames a part may go unseen before it counts as gone (default 10)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "JSON lines: one per part, a summary last (default stdout)", "FILE"},
      {"part-classes", 0, 0, G_OPTION_ARG_STRING, &parts, "default bracket,washer", "A,B"},
      {"defect-classes", 0, 0, G_OPTION_ARG_STRING, &defects,
       "default: every other label of the model", "A,B"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "no line per part on stderr", nullptr},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  const bool ok = app::parse_options(&argc, &argv, entries,
                                     "- torchinfer QA line: pass/reject per part", "qa-line: ");
  app::take(clip, o.clip);
  app::take(device, o.device);
  app::take(source, o.source);
  app::take(model, o.model);
  app::take(output, o.output);
  app::take(parts, o.part_classes);
  app::take(defects, o.defect_classes);
  o.quiet = quiet;
  if (!ok) return false;
  if (argc > 1) {
    g_printerr("qa-line: unexpected argument '%s'\n", argv[1]);
    return false;
  }
  if (!o.clip.empty() + !o.device.empty() + !o.source.empty() != 1) {
    g_printerr("qa-line: give exactly one of --clip, --device, --source\n");
    return false;
  }
  return true;
}

// Part and defect classes, checked against the model's labels when known.
bool make_rules(App& app) {
  const Options& o = app.opt;
  std::vector<std::string> labels;
  try {
    labels = model_labels(o.model);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  auto& r = app.rules;
  r.defect_threshold = o.defect_threshold;
  r.part_threshold = o.part_threshold;
  r.max_missed = o.max_missed;
  if (!o.part_classes.empty()) r.part_classes = split_classes(o.part_classes);
  if (!o.defect_classes.empty()) {
    r.defect_classes = split_classes(o.defect_classes);
  } else if (!labels.empty()) {
    r.defect_classes.clear();
    for (const auto& l : labels)
      if (!r.part_classes.count(l)) r.defect_classes.insert(l);
  }
  if (!labels.empty()) {
    for (const auto* set : {&r.part_classes, &r.defect_classes})
      for (const auto& c : *set)
        if (std::find(labels.begin(), labels.end(), c) == labels.end()) {
          g_printerr("qa-line: class '%s' is not a label of %s\n", c.c_str(), o.model.c_str());
          return false;
        }
  }
  try {
    torchinfer::validate(r);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  return true;
}

std::string launch_line(const App& app) {
  const Options& o = app.opt;
  std::string src;
  if (!o.clip.empty())
    src = "filesrc location=\"" + o.clip +
          "\" ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2";
  else if (!o.device.empty())
    src = "v4l2src device=\"" + o.device + "\" ! video/x-raw,format=YUY2";
  else
    src = o.source;
  // torchnms keeps weaker boxes than the rules need, so the decisions can show
  // near misses (max_confidence) too.
  const double keep = std::min({0.25, app.rules.defect_threshold, app.rules.part_threshold});
  gchar* nms = g_strdup_printf("%.6g", keep);
  std::string line = src + " ! torchinfer name=infer model=\"" + o.model +
                     "\" ! torchnms name=nms confidence-threshold=" + nms +
                     " ! fakesink sync=false";
  g_free(nms);
  return line;
}

void print_counts(const App& app) {
  const auto& c = app.tracker->counts();
  std::string by;
  for (const auto& [label, n] : c.rejected_by_defect)
    by += (by.empty() ? " (" : ", ") + label + " " + std::to_string(n);
  if (!by.empty()) by += ")";
  g_printerr(
      "qa-line: counts: %d passed, %d rejected%s, %d incomplete, %d spurious; %" G_GINT64_FORMAT
      " frames, %" G_GINT64_FORMAT " analysed%s\n",
      c.passed, c.rejected, by.c_str(), c.incomplete, c.spurious, app.info.frames,
      app.info.frames_inferred, app.info.interrupted ? "; stopped by signal" : "");
}

}  // namespace

int main(int argc, char** argv) {
  App app;
  if (!parse_args(argc, argv, app.opt)) return 2;
  gst_init(nullptr, nullptr);
  if (!make_rules(app)) return 2;
  app.tracker = std::make_unique<torchinfer::PartTracker>(app.rules);
  if (!app.opt.clip.empty() && !g_file_test(app.opt.clip.c_str(), G_FILE_TEST_IS_REGULAR)) {
    g_printerr("qa-line: clip %s not found\n", app.opt.clip.c_str());
    return 1;
  }
  if (!app.opt.output.empty() && app.opt.output != "-") {
    app.out = std::fopen(app.opt.output.c_str(), "w");
    if (!app.out) {
      g_printerr("qa-line: cannot write %s: %s\n", app.opt.output.c_str(), g_strerror(errno));
      return 1;
    }
  }

  GError* err = nullptr;
  app.pipeline = gst_parse_launch(launch_line(app).c_str(), &err);
  if (!app.pipeline || err) {
    g_printerr("qa-line: cannot build the pipeline: %s\n", err ? err->message : "unknown");
    if (err) g_error_free(err);
    if (app.pipeline) gst_object_unref(app.pipeline);
    return 2;
  }
  GstElement* nms = gst_bin_get_by_name(GST_BIN(app.pipeline), "nms");
  GstPad* nms_src = gst_element_get_static_pad(nms, "src");
  gst_pad_add_probe(nms_src, GST_PAD_PROBE_TYPE_BUFFER, on_result, &app, nullptr);
  gst_object_unref(nms_src);
  gst_object_unref(nms);

  app.loop = g_main_loop_new(nullptr, FALSE);
  GstBus* bus = gst_element_get_bus(app.pipeline);
  gst_bus_add_watch(bus, on_bus, &app);
  const guint sigint = g_unix_signal_add(SIGINT, on_signal, &app);
  const guint sigterm = g_unix_signal_add(SIGTERM, on_signal, &app);
  if (gst_element_set_state(app.pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    // The element that failed has put its reason on the bus.
    if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      print_error(m);
      gst_message_unref(m);
    } else {
      g_printerr("qa-line: the pipeline does not start\n");
    }
    app.rc = 1;
  } else {
    g_main_loop_run(app.loop);
  }
  gst_element_set_state(app.pipeline, GST_STATE_NULL);
  g_source_remove(sigint);
  g_source_remove(sigterm);
  gst_bus_remove_watch(bus);
  gst_object_unref(bus);

  // No probe runs after NULL: the tracker is ours alone now.
  if (app.rc == 0 || app.info.frames > 0) {
    report(app, app.tracker->flush());
    write_line(app, torchinfer::summary_json(app.tracker->counts(), app.info));
    print_counts(app);
  }
  if (app.out != stdout ? std::fclose(app.out) != 0 : std::fflush(app.out) != 0) {
    if (!app.write_failed)
      g_printerr("qa-line: error: cannot write decisions to %s: %s\n",
                 app.opt.output.empty() ? "stdout" : app.opt.output.c_str(), g_strerror(errno));
    app.write_failed = true;
  }
  if (app.write_failed) {
    g_printerr("qa-line: error: decisions were lost (output not written); exit status 1\n");
    app.rc = 1;
  }
  gst_object_unref(app.pipeline);
  g_main_loop_unref(app.loop);
  return app.rc;
}
