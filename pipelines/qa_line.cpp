// torchinfer-qa-line: a factory QA station. Camera (or clip) -> torchinfer
// (detector) -> torchnms -> torchtrack -> torchinfer (classifier on each part
// crop) -> one JSON decision per part id (pass / reject / incomplete) when it
// leaves, and final counts. With --truth it scores itself (the README's
// demo); with --out it writes the annotated video, a snapshot and the
// per-frame JSON. SIGINT/SIGTERM end the stream cleanly: EOS is sent into
// the pipeline, every frame already taken is analysed, open parts are
// decided, the counts printed, exit 0. Usage in pipelines/README.md.
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <sys/resource.h>
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

#include "app_numbers.h"
#include "app_options.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "export/mqtt_publisher.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "qa/decision_json.h"
#include "qa/part_verdicts.h"
#include "qa_annotate.h"
#include "qa_frames.h"
#include "qa_scores.h"

namespace app = torchinfer::app;

namespace {

constexpr const char* kNoClassifier = "none";

struct Options {
  std::string clip, device, source, model = "models/demo/parts_detector.pt", output;
  std::string classifier = "models/demo/defect_classifier.pt";
  std::string part_classes, defect_classes, tracking_type = "short-term", truth, out_dir;
  std::string mqtt_host, mqtt_topic = "qa-line/decisions";
  int mqtt_port = 1883;
  double defect_threshold = 0.5, part_threshold = 0.5;
  int inference_interval = 1;
  int reclassify_interval = 0;  // 0: the inference interval
  bool quiet = false;
};

struct App {
  Options opt;
  torchinfer::QaRules rules;
  torchinfer::qa::ReadRules read;
  std::unique_ptr<torchinfer::PartVerdicts> verdicts;
  std::unique_ptr<torchinfer::qa::Scorer> scorer;
  std::unique_ptr<torchinfer::MqttPublisher> mqtt;  // --mqtt-host: each line also published
  std::uint64_t mqtt_messages = 0;
  torchinfer::qa::Annotator annotator;
  std::map<long long, std::string> verdict_of;  // part id -> verdict, for the scores
  std::vector<double> detector_ms;              // forward() time of each inferred frame
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
// buffer fills. A failure stops the run (see App::write_failed). With
// --mqtt-host the line is also published (never blocks; what the broker
// did not get is counted at the end).
void write_line(App& app, const std::string& line) {
  if (app.write_failed) return;
  if (app.mqtt) {
    app.mqtt->publish(app.opt.mqtt_topic, line);
    app.mqtt_messages++;
  }
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
    app.verdict_of[d.part] = torchinfer::verdict_name(d.verdict);
    app.annotator.decided(d);
    write_line(app, torchinfer::decision_json(d));
    if (app.opt.quiet) continue;
    char top[96] = "no evidence";
    if (!d.top.empty()) std::snprintf(top, sizeof top, "%s %.2f", d.top.c_str(), d.top_score);
    g_printerr("qa-line: part #%d %s %s (%s over %d views), frames %" G_GINT64_FORMAT
               "-%" G_GINT64_FORMAT ", %s\n",
               d.part, d.label.c_str(), torchinfer::verdict_name(d.verdict), top, d.frames_judged,
               d.first_frame, d.last_frame, d.reason.c_str());
  }
}

// Runs on the last analysing element's push thread, once per frame in order.
GstPadProbeReturn on_result(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* app = static_cast<App*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  const std::int64_t frame = app->info.frames++;
  try {
    const auto r = torchinfer::qa::read_frame(buf, frame, app->read);
    if (app->scorer) app->scorer->add(r);
    if (!r.has_detector) return GST_PAD_PROBE_OK;
    if (r.detector_inferred && app->info.frames_inferred++ == 0)
      g_printerr("qa-line: analysing (first frame at %" GST_TIME_FORMAT ")\n",
                 GST_TIME_ARGS(GST_BUFFER_PTS(buf)));
    if (r.detector_inferred) app->detector_ms.push_back(r.detector_ms);
    report(*app, app->verdicts->add_frame(r.frame));
    app->annotator.set_parts(r.frame.parts);
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
        *parts = nullptr, *defects = nullptr, *classifier = nullptr, *tracking = nullptr,
        *truth = nullptr, *out_dir = nullptr, *mqtt_host = nullptr, *mqtt_topic = nullptr;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
      {"clip", 'c', 0, G_OPTION_ARG_FILENAME, &clip,
       "MJPEG Matroska clip, decoded to YUY2 as a camera sends it", "FILE"},
      {"device", 'd', 0, G_OPTION_ARG_FILENAME, &device, "V4L2 camera giving YUY2", "/dev/videoN"},
      {"source", 's', 0, G_OPTION_ARG_STRING, &source,
       "any launch fragment ending in raw video (instead of --clip/--device)", "LAUNCH"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "detector (default models/demo/parts_detector.pt)", "FILE"},
      {"classifier", 0, 0, G_OPTION_ARG_FILENAME, &classifier,
       "classifier of the part crops (default models/demo/defect_classifier.pt); 'none': judge "
       "from the detector's defect boxes",
       "FILE|none"},
      {"inference-interval", 'i', 0, G_OPTION_ARG_INT, &o.inference_interval,
       "run the detector on every Nth frame; torchtrack follows the parts between (default 1)",
       "N"},
      {"reclassify-interval", 0, 0, G_OPTION_ARG_INT, &o.reclassify_interval,
       "classify each part on every Nth frame (default: the inference interval)", "N"},
      {"tracking-type", 0, 0, G_OPTION_ARG_STRING, &tracking,
       "torchtrack tracking-type: short-term (default) or zero-term", "TYPE"},
      {"defect-threshold", 't', 0, G_OPTION_ARG_DOUBLE, &o.defect_threshold,
       "with --classifier none: reject a part when a defect box reaches this confidence (default "
       "0.5)",
       "0..1"},
      {"part-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &o.part_threshold,
       "least confidence of a part detection that is judged (default 0.5)", "0..1"},
      {"truth", 0, 0, G_OPTION_ARG_FILENAME, &truth,
       "ground truth of the clip (models/demo/line.truth.json): print detection, tracking and "
       "verdict scores",
       "FILE"},
      {"mqtt-host", 0, 0, G_OPTION_ARG_STRING, &mqtt_host,
       "also publish every decision and the summary to this MQTT broker (QoS 1)", "HOST"},
      {"mqtt-port", 0, 0, G_OPTION_ARG_INT, &o.mqtt_port, "MQTT broker port (default 1883)", "N"},
      {"mqtt-topic", 0, 0, G_OPTION_ARG_STRING, &mqtt_topic,
       "topic of the decisions (default qa-line/decisions)", "TOPIC"},
      {"out", 0, 0, G_OPTION_ARG_FILENAME, &out_dir,
       "also write DIR/results.jsonl (per frame), DIR/annotated.mkv, DIR/snapshot.png", "DIR"},
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
  app::take(classifier, o.classifier);
  app::take(tracking, o.tracking_type);
  app::take(truth, o.truth);
  app::take(out_dir, o.out_dir);
  app::take(mqtt_host, o.mqtt_host);
  app::take(mqtt_topic, o.mqtt_topic);
  o.quiet = quiet;
  if (!ok) return false;
  if (!app::check_range("--inference-interval", static_cast<long long>(o.inference_interval), 1,
                        1000))
    return false;
  if (o.reclassify_interval == 0) {
    o.reclassify_interval = o.inference_interval;
  } else if (!app::check_range("--reclassify-interval",
                               static_cast<long long>(o.reclassify_interval), 1, 1000)) {
    return false;
  }
  if (o.tracking_type != "short-term" && o.tracking_type != "zero-term") {
    g_printerr("qa-line: --tracking-type '%s': give short-term or zero-term\n",
               o.tracking_type.c_str());
    return false;
  }
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

bool has_classifier(const Options& o) {
  return o.classifier != kNoClassifier;
}

// False, with a message, if a class is not among `labels` (when known).
bool known_classes(const std::set<std::string>& classes, const std::vector<std::string>& labels,
                   const std::string& model) {
  for (const auto& c : classes)
    if (!labels.empty() && std::find(labels.begin(), labels.end(), c) == labels.end()) {
      g_printerr("qa-line: class '%s' is not a label of %s\n", c.c_str(), model.c_str());
      return false;
    }
  return true;
}

// Part classes are the detector's; defect classes the classifier's (its
// other labels, e.g. "ok", are good), or the detector's without one.
bool make_rules(App& app) {
  const Options& o = app.opt;
  std::vector<std::string> labels, classifier_labels;
  try {
    labels = model_labels(o.model);
    if (has_classifier(o)) classifier_labels = model_labels(o.classifier);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  if (!(o.part_threshold >= 0 && o.part_threshold <= 1)) {
    g_printerr("qa-line: part threshold must lie in 0..1\n");
    return false;
  }
  auto& r = app.rules;
  r.rule = has_classifier(o) ? torchinfer::QaRule::kVote : torchinfer::QaRule::kMax;
  r.defect_threshold = o.defect_threshold;
  if (!o.part_classes.empty()) r.part_classes = split_classes(o.part_classes);
  if (!o.defect_classes.empty()) {
    r.defect_classes = split_classes(o.defect_classes);
  } else if (!labels.empty()) {
    r.defect_classes.clear();
    for (const auto& l : labels)
      if (!r.part_classes.count(l)) r.defect_classes.insert(l);
  }
  try {
    torchinfer::validate(r);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  if (!known_classes(r.part_classes, labels, o.model) ||
      !known_classes(r.defect_classes, has_classifier(o) ? classifier_labels : labels,
                     has_classifier(o) ? o.classifier : o.model))
    return false;
  app.read.part_classes.assign(r.part_classes.begin(), r.part_classes.end());
  app.read.part_threshold = o.part_threshold;
  app.read.classifier = has_classifier(o);
  return true;
}

// torchtrack confirms a track after min-hits inferred frames (3 by default):
// with the detector on every Nth frame that would leave a new part without
// an id for 3N frames, so the app keeps the wait near 3 frames.
int min_hits(int inference_interval) {
  return std::max(1, 3 / inference_interval);
}

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

// source ! detector ! torchnms ! torchtrack ! classifier on the part ROIs
// (by default each part classified as often as the detector runs)
// [! per-frame JSON ! overlay ! annotated video] ! sink. Results are read
// at the src pad of the last analysing element ("analysed").
std::string launch_line(const App& app) {
  const Options& o = app.opt;
  std::string src;
  if (!o.clip.empty())
    src = "filesrc location=" + quoted(o.clip) +
          " ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2";
  else if (!o.device.empty())
    src = "v4l2src device=" + quoted(o.device) + " ! video/x-raw,format=YUY2";
  else
    src = o.source;
  std::string parts;
  for (const auto& c : app.rules.part_classes) parts += (parts.empty() ? "" : ",") + c;
  // torchnms keeps the weaker of the two thresholds; part boxes below
  // --part-threshold are then tracked but not judged.
  gchar* nms = g_strdup_printf("%.6g", std::min(app.rules.defect_threshold, o.part_threshold));
  std::string line = src + " ! torchinfer name=infer model=" + quoted(o.model) +
                     " model-instance-id=" + torchinfer::qa::kDetectorId +
                     " inference-interval=" + std::to_string(o.inference_interval) +
                     " ! torchnms name=nms confidence-threshold=" + nms +
                     " ! torchtrack name=track tracking-type=" + o.tracking_type +
                     " min-hits=" + std::to_string(min_hits(o.inference_interval));
  g_free(nms);
  if (has_classifier(o))
    line += std::string(" ! torchinfer name=") + torchinfer::qa::kClassifierElement +
            " model=" + quoted(o.classifier) +
            " model-instance-id=qa-classifier inference-region=roi-list object-class=" + parts +
            " object-padding=0.1 reclassify-interval=" + std::to_string(o.reclassify_interval);
  line += " ! identity name=analysed";
  if (o.out_dir.empty()) return line + " ! fakesink sync=false";
  return line + " ! torchmetaconvert location=" + quoted(o.out_dir + "/results.jsonl") +
         " ! torchoverlay show-hud=true ! videoconvert ! video/x-raw,format=BGR"
         " ! identity name=annotated ! jpegenc quality=85 ! matroskamux ! filesink location=" +
         quoted(o.out_dir + "/annotated.mkv");
}

void print_counts(const App& app) {
  const auto& c = app.verdicts->counts();
  std::string by;
  for (const auto& [label, n] : c.rejected_by_defect)
    by += (by.empty() ? " (" : ", ") + label + " " + std::to_string(n);
  if (!by.empty()) by += ")";
  g_printerr(
      "qa-line: counts: %d passed, %d rejected%s, %d incomplete, %d duplicates; %" G_GINT64_FORMAT
      " frames, %" G_GINT64_FORMAT " analysed%s\n",
      c.passed, c.rejected, by.c_str(), c.incomplete, c.duplicates, app.info.frames,
      app.info.frames_inferred, app.info.interrupted ? "; stopped by signal" : "");
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The detector's cost per frame of the stream (the figure inference-interval
// lowers) and, with --truth, the scores; also printed for a person.
nlohmann::ordered_json run_facts(App& app) {
  nlohmann::ordered_json j;
  const double frames = std::max<std::int64_t>(app.info.frames, 1);
  std::vector<double> ms = app.detector_ms;
  double sum = 0, p50 = 0;
  for (double v : ms) sum += v;
  if (!ms.empty()) {
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    p50 = ms[ms.size() / 2];
  }
  // Per frame of the stream: what --inference-interval divides. The median
  // one is steadier than the mean on a shared machine.
  const double share = static_cast<double>(app.detector_ms.size()) / frames;
  j["detector"] = {{"inference_interval", app.opt.inference_interval},
                   {"inference_ms_p50", p50},
                   {"inference_ms_per_frame", sum / frames},
                   {"inference_ms_p50_per_frame", p50 * share},
                   {"process_cpu_s", process_cpu_s()}};
  g_printerr("qa-line: detector: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
             " frames inferred, inference %.2f ms (median), %.2f ms per frame of the stream "
             "(median x share inferred; mean %.2f); process CPU %.1f s\n",
             app.info.frames_inferred, app.info.frames, p50, p50 * share, sum / frames,
             process_cpu_s());
  if (!app.scorer) return j;
  std::vector<std::string> wrong;
  const auto s = app.scorer->finish(app.verdict_of, app.verdicts->duplicate_ids(), &wrong);
  const auto &d = s["detection"], &t = s["tracking"], &a = s["tracking_all"], &v = s["verdicts"];
  g_printerr(
      "qa-line: detection against the truth (IoU >= 0.5, same class): recall %.1f%%, "
      "precision %.1f%%\n",
      100 * d["recall"].get<double>(), 100 * d["precision"].get<double>());
  g_printerr(
      "qa-line: tracking of the parts: MOTA %.3f, IDF1 %.3f, %d id switches, %d tracks for "
      "%d parts (count error %d)\n",
      t["mota"].get<double>(), t["idf1"].get<double>(), t["id_switches"].get<int>(),
      t["tracks"].get<int>(), t["truth_parts"].get<int>(), t["count_error"].get<int>());
  g_printerr(
      "qa-line: every torchtrack track of a part class, duplicates too: MOTA %.3f, IDF1 %.3f, %d "
      "id switches, %d tracks\n",
      a["mota"].get<double>(), a["idf1"].get<double>(), a["id_switches"].get<int>(),
      a["tracks"].get<int>());
  g_printerr("qa-line: verdicts: %d of %d parts right (accuracy %.1f%%), %d missing, %d extra\n",
             v["correct"].get<int>(), v["judged"].get<int>(), 100 * v["accuracy"].get<double>(),
             v["missing"].get<int>(), v["extra"].get<int>());
  for (const auto& w : wrong) g_printerr("qa-line:   wrong: %s\n", w.c_str());
  j["scores"] = s;
  return j;
}

GstPad* src_pad(GstElement* pipeline, const char* name) {
  GstElement* e = gst_bin_get_by_name(GST_BIN(pipeline), name);
  if (!e) return nullptr;
  GstPad* p = gst_element_get_static_pad(e, "src");
  gst_object_unref(e);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  App app;
  if (!parse_args(argc, argv, app.opt)) return 2;
  gst_init(nullptr, nullptr);
  if (!make_rules(app)) return 2;
  app.verdicts = std::make_unique<torchinfer::PartVerdicts>(app.rules);
  if (!app.opt.truth.empty()) {
    try {
      app.scorer = std::make_unique<torchinfer::qa::Scorer>(app.opt.truth, app.rules.part_classes);
    } catch (const std::exception& e) {
      g_printerr("qa-line: %s\n", e.what());
      return 2;
    }
  }
  if (!app.opt.mqtt_host.empty()) {
    torchinfer::MqttOptions m;
    m.host = app.opt.mqtt_host;
    m.port = app.opt.mqtt_port;
    m.qos = 1;
    // A broker that is down is retried; the decisions wait (bounded) and
    // what never arrives is counted at the end.
    auto on_event = [host = m.host, port = m.port](torchinfer::MqttEvent e,
                                                   const std::string& why) {
      if (e == torchinfer::MqttEvent::kConnected)
        g_printerr("qa-line: connected to MQTT broker %s:%d\n", host.c_str(), port);
      else
        g_printerr("qa-line: warning: MQTT broker %s:%d: %s\n", host.c_str(), port, why.c_str());
    };
    try {
      if (const std::string why = torchinfer::mqtt_topic_problem(app.opt.mqtt_topic); !why.empty())
        throw std::invalid_argument("--mqtt-topic '" + app.opt.mqtt_topic + "': " + why);
      app.mqtt = std::make_unique<torchinfer::MqttPublisher>(m, on_event);
    } catch (const std::exception& e) {
      g_printerr("qa-line: %s\n", e.what());
      return 2;
    }
  }
  if (!app.opt.out_dir.empty() && g_mkdir_with_parents(app.opt.out_dir.c_str(), 0755) != 0) {
    g_printerr("qa-line: cannot create %s: %s\n", app.opt.out_dir.c_str(), g_strerror(errno));
    return 1;
  }
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
  GstPad* analysed = src_pad(app.pipeline, "analysed");
  gst_pad_add_probe(analysed, GST_PAD_PROBE_TYPE_BUFFER, on_result, &app, nullptr);
  gst_object_unref(analysed);
  if (GstPad* annotated = src_pad(app.pipeline, "annotated")) {
    gst_pad_add_probe(annotated, GST_PAD_PROBE_TYPE_BUFFER, torchinfer::qa::Annotator::probe,
                      &app.annotator, nullptr);
    gst_object_unref(annotated);
  }

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

  // No probe runs after NULL: the verdicts are ours alone now.
  if (app.rc == 0 || app.info.frames > 0) {
    report(app, app.verdicts->flush());
    print_counts(app);
    nlohmann::ordered_json facts;
    try {
      facts = run_facts(app);
    } catch (const std::exception& e) {
      g_printerr("qa-line: error: cannot score against %s: %s\n", app.opt.truth.c_str(), e.what());
      app.rc = 1;
    }
    write_line(app, torchinfer::summary_json(app.verdicts->counts(), app.info, facts));
    if (!app.opt.out_dir.empty()) {
      const std::string snap = app.opt.out_dir + "/snapshot.png";
      if (app.annotator.write_snapshot(snap))
        g_printerr("qa-line: wrote %s/results.jsonl, %s/annotated.mkv, %s\n",
                   app.opt.out_dir.c_str(), app.opt.out_dir.c_str(), snap.c_str());
      else if (app.rc == 0)
        g_printerr("qa-line: warning: no snapshot written to %s\n", snap.c_str());
    }
  }
  if (app.mqtt) {
    app.mqtt->stop();
    const auto c = app.mqtt->counters();
    if (c.failed + c.dropped > 0) {
      g_printerr("qa-line: error: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                 " lines not delivered to MQTT broker %s:%d (topic %s); exit status 1\n",
                 static_cast<guint64>(c.failed + c.dropped),
                 static_cast<guint64>(app.mqtt_messages), app.opt.mqtt_host.c_str(),
                 app.opt.mqtt_port, app.opt.mqtt_topic.c_str());
      app.rc = 1;
    }
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
