#include "qa/qa_options.h"

#include <gst/gst.h>

#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "app/app_numbers.h"
#include "app/app_options.h"

namespace torchinfer::qa {

namespace app = torchinfer::app;

namespace {

// GLib's string options, owned until moved into Options.
struct Strings {
  gchar *clip = nullptr, *device = nullptr, *source = nullptr, *model = nullptr, *output = nullptr,
        *parts = nullptr, *defects = nullptr, *classifier = nullptr, *anomaly = nullptr,
        *segmenter = nullptr, *area_views = nullptr, *tracking = nullptr, *truth = nullptr,
        *out_dir = nullptr, *mqtt_host = nullptr, *mqtt_topic = nullptr;
  // A string: an int option has no "not given" that a user cannot also type.
  gchar* reclassify_interval = nullptr;
  gchar* gate = nullptr;  // parsed in check_values
  gboolean quiet = FALSE, codes = FALSE, require_code = FALSE;
  gchar *evidence = nullptr, *evidence_encoder = nullptr;
  gchar *evidence_pre_s = nullptr, *evidence_post_s = nullptr;  // text: "not given" apart
  std::optional<std::string> pre_text, post_text;               // taken from the two above
  gint64 evidence_max_events = G_MININT64, evidence_max_bytes = G_MININT64;  // not given
};

// The camera or clip, the models and how often they run.
void add_input_entries(Options& o, Strings& s, std::vector<GOptionEntry>& e) {
  const GOptionEntry entries[] = {
      {"clip", 'c', 0, G_OPTION_ARG_FILENAME, &s.clip,
       "MJPEG Matroska clip, decoded to YUY2 as a camera sends it", "FILE"},
      {"device", 'd', 0, G_OPTION_ARG_FILENAME, &s.device, "V4L2 camera giving YUY2",
       "/dev/videoN"},
      {"source", 's', 0, G_OPTION_ARG_STRING, &s.source,
       "any launch fragment ending in raw video (instead of --clip/--device)", "LAUNCH"},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &s.model,
       "detector (default models/demo/parts_detector.pt)", "FILE"},
      {"classifier", 0, 0, G_OPTION_ARG_FILENAME, &s.classifier,
       "classifier of the part crops (default models/demo/defect_classifier.pt); 'none': judge "
       "from the detector's defect boxes",
       "FILE|none"},
      {"anomaly", 0, 0, G_OPTION_ARG_FILENAME, &s.anomaly,
       "anomaly model of the part crops (task anomaly, e.g. models/demo/part_anomaly.pt): a part "
       "is rejected when the median score of its views is anomalous, or the classifier rejects "
       "it; with --classifier none the anomaly model alone judges",
       "FILE"},
      {"segmenter", 0, 0, G_OPTION_ARG_FILENAME, &s.segmenter,
       "segmentation model of the whole frame (decoder yolov8-seg, e.g. "
       "models/demo/defect_seg.pt): its defect masks, not the detector's defect boxes, judge the "
       "parts by area (needs --classifier none and --max-defect-area-mm2)",
       "FILE"},
      {"inference-interval", 'i', 0, G_OPTION_ARG_INT, &o.inference_interval,
       "run the detector on every Nth frame; torchtrack follows the parts between (default 1)",
       "N"},
      {"reclassify-interval", 0, 0, G_OPTION_ARG_STRING, &s.reclassify_interval,
       "classify each part on every Nth frame, 1..1000 (default: the inference interval)", "N"}};
  e.insert(e.end(), std::begin(entries), std::end(entries));
}

// Tracking and the thresholds that judge a part.
void add_judge_entries(Options& o, Strings& s, std::vector<GOptionEntry>& e) {
  const GOptionEntry entries[] = {
      {"tracking-type", 0, 0, G_OPTION_ARG_STRING, &s.tracking,
       "torchtrack tracking-type: short-term (default) or zero-term", "TYPE"},
      {"defect-threshold", 't', 0, G_OPTION_ARG_DOUBLE, &o.defect_threshold,
       "with --classifier none: reject a part when a defect box reaches this confidence (default "
       "0.5)",
       "0..1"},
      {"part-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &o.part_threshold,
       "least confidence of a part detection that is judged (default 0.5)", "0..1"},
      {"codes", 0, 0, G_OPTION_ARG_NONE, &s.codes,
       "read each part's DataMatrix/QR/1D code (torchcodes, once per track); the decision line "
       "carries it",
       nullptr},
      {"require-code", 0, 0, G_OPTION_ARG_NONE, &s.require_code,
       "reject a part without a readable code (defect no_code); implies --codes", nullptr},
      {"max-defect-area-mm2", 0, 0, G_OPTION_ARG_DOUBLE, &o.max_defect_area_mm2,
       "with --classifier none and a segmentation detector (decoder yolov8-seg) or --segmenter: "
       "reject a part only for a defect whose mask is larger than this many square mm (needs "
       "--mm-per-pixel)",
       "MM2"},
      {"mm-per-pixel", 0, 0, G_OPTION_ARG_DOUBLE, &o.mm_per_pixel,
       "the camera's calibration: one frame pixel is this many mm on the belt", "MM"},
      {"defect-area-views", 0, 0, G_OPTION_ARG_STRING, &s.area_views,
       "with --max-defect-area-mm2: a defect's area over the part's judged whole views, max "
       "(the largest, default) or median (0 on views without it: a false mask on a few views "
       "does not reject)",
       "max|median"}};
  e.insert(e.end(), std::begin(entries), std::end(entries));
}

// Where the decisions, scores and counts go.
void add_output_entries(Options& o, Strings& s, std::vector<GOptionEntry>& e) {
  const GOptionEntry entries[] = {
      {"truth", 0, 0, G_OPTION_ARG_FILENAME, &s.truth,
       "ground truth of the clip (models/demo/line.truth.json): print detection, tracking and "
       "verdict scores",
       "FILE"},
      {"mqtt-host", 0, 0, G_OPTION_ARG_STRING, &s.mqtt_host,
       "also publish every decision and the summary to this MQTT broker (QoS 1)", "HOST"},
      {"mqtt-port", 0, 0, G_OPTION_ARG_INT, &o.mqtt_port, "MQTT broker port (default 1883)", "N"},
      {"mqtt-topic", 0, 0, G_OPTION_ARG_STRING, &s.mqtt_topic,
       "topic of the decisions (default qa-line/decisions)", "TOPIC"},
      {"out", 0, 0, G_OPTION_ARG_FILENAME, &s.out_dir,
       "also write DIR/results.jsonl (per frame), DIR/annotated.mkv, DIR/snapshot.png", "DIR"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &s.output,
       "JSON lines: one per part, a summary last (default stdout)", "FILE"},
      {"part-classes", 0, 0, G_OPTION_ARG_STRING, &s.parts, "default bracket,washer", "A,B"},
      {"defect-classes", 0, 0, G_OPTION_ARG_STRING, &s.defects,
       "default: every other label of the model", "A,B"},
      {"gate", 0, 0, G_OPTION_ARG_STRING, &s.gate,
       "decide each part when its centre crosses this line (frame pixels; default: when it "
       "leaves the view) and count the parts per class and verdict at it",
       "X1,Y1,X2,Y2"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &s.quiet, "no line per part on stderr", nullptr}};
  e.insert(e.end(), std::begin(entries), std::end(entries));
}

// The evidence kept for every reject.
void add_evidence_entries(Strings& s, std::vector<GOptionEntry>& e) {
  const GOptionEntry entries[] = {
      {"evidence", 0, 0, G_OPTION_ARG_FILENAME, &s.evidence,
       "for every reject keep DIR/qa-line-N-snapshot.jpg (the frame where the part was best "
       "seen), -crop.jpg and -clip.mkv; the decision line names them",
       "DIR"},
      {"evidence-pre-s", 0, 0, G_OPTION_ARG_STRING, &s.evidence_pre_s,
       "clip seconds before the decision, 0..30 (default 2)", "S"},
      {"evidence-post-s", 0, 0, G_OPTION_ARG_STRING, &s.evidence_post_s,
       "clip seconds after the decision, 0..30 (default 1)", "S"},
      {"evidence-max-events", 0, 0, G_OPTION_ARG_INT64, &s.evidence_max_events,
       "keep the newest N events' files, 1..1000000 (default 1000)", "N"},
      {"evidence-max-bytes", 0, 0, G_OPTION_ARG_INT64, &s.evidence_max_bytes,
       "keep at most this many bytes of evidence files, from 4096 (default 1 GiB)", "BYTES"},
      {"evidence-encoder", 0, 0, G_OPTION_ARG_STRING, &s.evidence_encoder,
       "the clip ring's encoder: jpeg (default) or h264", "jpeg|h264"}};
  e.insert(e.end(), std::begin(entries), std::end(entries));
}

// The option table in --help order, its parts grouped by what they set.
bool parse_entries(int* argc, char*** argv, Options& o, Strings& s) {
  std::vector<GOptionEntry> entries;
  add_input_entries(o, s, entries);
  add_judge_entries(o, s, entries);
  add_output_entries(o, s, entries);
  add_evidence_entries(s, entries);
  entries.push_back({nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr});
  return app::parse_options(argc, argv, entries.data(),
                            "- torchinfer QA line: pass/reject per part", "qa-line: ");
}

// Moves what GLib allocated into `o`; `reclassify` gets the text of
// --reclassify-interval if it was given.
void take_strings(Strings& s, Options& o, std::optional<std::string>& reclassify,
                  std::optional<std::string>& gate) {
  if (s.reclassify_interval) reclassify = s.reclassify_interval;
  g_free(s.reclassify_interval);
  if (s.gate) gate = s.gate;
  g_free(s.gate);
  app::take(s.clip, o.clip);
  app::take(s.device, o.device);
  app::take(s.source, o.source);
  app::take(s.model, o.model);
  app::take(s.output, o.output);
  app::take(s.parts, o.part_classes);
  app::take(s.defects, o.defect_classes);
  app::take(s.classifier, o.classifier);
  o.anomaly_given = s.anomaly != nullptr;
  app::take(s.anomaly, o.anomaly);
  o.segmenter_given = s.segmenter != nullptr;
  app::take(s.segmenter, o.segmenter);
  app::take(s.area_views, o.defect_area_views);
  app::take(s.tracking, o.tracking_type);
  app::take(s.truth, o.truth);
  app::take(s.out_dir, o.out_dir);
  o.mqtt = s.mqtt_host != nullptr;
  app::take(s.mqtt_host, o.mqtt_host);
  app::take(s.mqtt_topic, o.mqtt_topic);
  o.quiet = s.quiet;
  o.require_code = s.require_code;
  o.codes = s.codes || s.require_code;
  o.evidence = s.evidence != nullptr;
  app::take(s.evidence, o.evidence_dir);
  app::take(s.evidence_encoder, o.evidence_encoder);
  if (s.evidence_pre_s) s.pre_text = s.evidence_pre_s;
  if (s.evidence_post_s) s.post_text = s.evidence_post_s;
  g_free(s.evidence_pre_s);
  g_free(s.evidence_post_s);
}

// Seconds of --evidence-pre-s / --evidence-post-s, 0..30.
bool parse_seconds(const char* option, const std::string& text, double* out) {
  char* end = nullptr;
  const double v = g_ascii_strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    g_printerr("qa-line: %s '%s': give seconds from 0 to 30\n", option, text.c_str());
    return false;
  }
  *out = v;
  return app::check_range(option, v, 0.0, 30.0);
}

// The --evidence-* values: in range, and only with --evidence (alone they
// would quietly keep nothing).
bool check_evidence(const Strings& s, Options& o) {
  const bool settings = s.pre_text || s.post_text || s.evidence_max_events != G_MININT64 ||
                        s.evidence_max_bytes != G_MININT64 || o.evidence_encoder != "jpeg";
  if (!o.evidence) {
    if (settings) g_printerr("qa-line: --evidence-* options need --evidence DIR\n");
    return !settings;
  }
  if (o.evidence_dir.empty()) {
    g_printerr("qa-line: --evidence '': give the folder for the evidence files\n");
    return false;
  }
  if (s.evidence_max_events != G_MININT64) o.evidence_max_events = s.evidence_max_events;
  if (s.evidence_max_bytes != G_MININT64) o.evidence_max_bytes = s.evidence_max_bytes;
  if (o.evidence_encoder != "jpeg" && o.evidence_encoder != "h264") {
    g_printerr("qa-line: --evidence-encoder '%s': give jpeg or h264\n", o.evidence_encoder.c_str());
    return false;
  }
  return (!s.pre_text || parse_seconds("--evidence-pre-s", *s.pre_text, &o.evidence_pre_s)) &&
         (!s.post_text || parse_seconds("--evidence-post-s", *s.post_text, &o.evidence_post_s)) &&
         app::check_range("--evidence-max-events", o.evidence_max_events, 1LL, 1000000LL) &&
         app::check_range("--evidence-max-bytes", o.evidence_max_bytes, 4096LL, 1LL << 50);
}

// --reclassify-interval, 1..1000; the inference interval when not given.
bool reclassify_interval(const std::optional<std::string>& given, Options& o) {
  if (!given) {
    o.reclassify_interval = o.inference_interval;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(given->c_str(), &end, 10);
  if (given->empty() || errno != 0 || *end != '\0') {
    g_printerr("qa-line: --reclassify-interval '%s': give an integer from 1 to 1000\n",
               given->c_str());
    return false;
  }
  if (!app::check_range("--reclassify-interval", v, 1, 1000)) return false;
  o.reclassify_interval = static_cast<int>(v);
  return true;
}

// The values GLib accepted as such but the app cannot run with.
bool check_values(const std::optional<std::string>& reclassify,
                  const std::optional<std::string>& gate, Options& o) {
  if (!app::check_range("--inference-interval", static_cast<long long>(o.inference_interval), 1,
                        1000) ||
      !reclassify_interval(reclassify, o))
    return false;
  if (gate) {
    o.gate.emplace();
    if (const std::string why = parse_gate(*gate, &*o.gate); !why.empty()) {
      g_printerr("%s\n", why.c_str());
      return false;
    }
  }
  if (o.tracking_type != "short-term" && o.tracking_type != "zero-term") {
    g_printerr("qa-line: --tracking-type '%s': give short-term or zero-term\n",
               o.tracking_type.c_str());
    return false;
  }
  // An empty path would quietly judge without the anomaly model.
  if (o.anomaly_given && o.anomaly.empty()) {
    g_printerr("qa-line: --anomaly '': give the anomaly model's file, or leave the option out\n");
    return false;
  }
  if (o.defect_area_views != "max" && o.defect_area_views != "median") {
    g_printerr("qa-line: --defect-area-views '%s': give max or median\n",
               o.defect_area_views.c_str());
    return false;
  }
  if (o.segmenter_given && o.segmenter.empty()) {
    g_printerr(
        "qa-line: --segmenter '': give the segmentation model's file, or leave the option "
        "out\n");
    return false;
  }
  // An empty host would quietly publish nothing.
  if (o.mqtt && o.mqtt_host.empty()) {
    g_printerr(
        "qa-line: --mqtt-host '': give the broker's host name or address, or leave the "
        "option out to publish nothing\n");
    return false;
  }
  return true;
}

}  // namespace

bool parse_args(int argc, char** argv, Options& o) {
  Strings s;
  const bool ok = parse_entries(&argc, &argv, o, s);
  std::optional<std::string> reclassify, gate;
  take_strings(s, o, reclassify, gate);
  if (!ok || !check_values(reclassify, gate, o) || !check_evidence(s, o)) return false;
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

}  // namespace torchinfer::qa
