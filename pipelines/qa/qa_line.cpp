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
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/file_check.h"
#include "export/mqtt_publisher.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"
#include "parts/qa_frames.h"
#include "parts/qa_plc.h"
#include "qa/qa_annotate.h"
#include "qa/qa_counts.h"
#include "qa/qa_evidence.h"
#include "qa/qa_gate.h"
#include "qa/qa_line_app.h"
#include "qa/qa_options.h"
#include "qa/qa_pipeline.h"
#include "qa/qa_rules.h"
#include "qa/qa_scores.h"

namespace qa = torchinfer::qa;

namespace {

using namespace torchinfer::qa::line;

void report(App& app, const std::vector<torchinfer::QaDecision>& decisions) {
  for (const auto& d : decisions) {
    app.verdict_of[d.part] = torchinfer::verdict_name(d.verdict);
    if (!d.direction.empty()) app.gate.verdicts[d.direction][torchinfer::verdict_name(d.verdict)]++;
    if (d.anomaly) app.anomaly_of[d.part] = *d.anomaly;
    app.annotator.decided(d);
    const auto files = app.evidence ? app.evidence->decided(d) : nlohmann::ordered_json();
    std::string line = torchinfer::decision_json(d, files, app.rules.codes);
    if (app.plc) {
      // The pulse this part gets (docs/line-io.md), on the decision line.
      auto j = nlohmann::ordered_json::parse(line);
      j["plc"] = app.plc->decided(d, torchinfer::steady_now_ns());
      line = j.dump();
    }
    write_line(app, line);
    if (app.opt.quiet) continue;
    char top[160] = "";
    if (!d.anomaly) std::snprintf(top, sizeof top, "no evidence");
    if (!d.top.empty()) std::snprintf(top, sizeof top, "%s %.2f", d.top.c_str(), d.top_score);
    if (const auto a = d.defect_area_mm2.find(d.top); a != d.defect_area_mm2.end())
      std::snprintf(top + std::strlen(top), sizeof top - std::strlen(top), ", area %.2f mm2",
                    a->second);
    if (d.anomaly)
      std::snprintf(top + std::strlen(top), sizeof top - std::strlen(top),
                    "%sanomaly %.3f (median, threshold %.2f)%s", *top ? "; " : "", d.anomaly->score,
                    d.anomaly->threshold, d.anomaly->anomalous ? " anomalous" : "");
    g_printerr("qa-line: part #%d %s %s (%s over %d views), frames %" G_GINT64_FORMAT
               "-%" G_GINT64_FORMAT ", %s%s\n",
               d.part, d.label.c_str(), torchinfer::verdict_name(d.verdict), top, d.frames_judged,
               d.first_frame, d.last_frame, d.reason.c_str(),
               qa::code_note(d, app.rules.codes).c_str());
  }
}

// Scores the frame against the truth; false (the run stops) when the truth
// is not this clip's.
bool score(App& app, const qa::FrameResults& r) {
  const std::string why = app.scorer->other_frame(r);
  if (why.empty()) {
    app.scorer->add(r);
    return true;
  }
  g_printerr("qa-line: error: %s; stopping\n", why.c_str());
  app.truth_mismatch = true;
  stop_from_stream(app, "qa-line-truth-mismatch");
  return false;
}

// --gate: this frame's crossings into `frame`; false (the run stops, exit
// 2) when the gate does not lie in the frame.
bool at_gate(App& app, GstBuffer* buf, torchinfer::QaFrame& frame) {
  if (app.gate_outside) return false;
  const std::string why = qa::gate_outside(*app.opt.gate, frame.width, frame.height);
  if (!why.empty()) {
    g_printerr("%s; stopping\n", why.c_str());
    app.gate_outside = true;
    stop_from_stream(app, "qa-line-gate-outside");
    return false;
  }
  frame.crossed = qa::read_gate(buf, app.rules.part_classes, app.gate);
  return true;
}

// When the frame was taken, on the steady clock the belt's encoder readings
// are on: a live source's capture time (the pipeline clock is the monotonic
// system clock); a clip's frame is taken as its analysis comes out, so a
// clip plays like a camera whose frames are taken at that pace.
std::int64_t frame_time(const App& app, GstBuffer* buf) {
  const bool live = app.opt.clip.empty();
  if (live && GST_BUFFER_PTS_IS_VALID(buf))
    return static_cast<std::int64_t>(gst_element_get_base_time(app.pipeline) + GST_BUFFER_PTS(buf));
  return torchinfer::steady_now_ns();
}

// Runs on the last analysing element's push thread, once per frame in order.
GstPadProbeReturn on_result(GstPad* pad, GstPadProbeInfo* info, gpointer user) {
  auto* app = static_cast<App*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  const std::int64_t frame = app->info.frames++;
  if (app->truth_mismatch) return GST_PAD_PROBE_OK;
  try {
    auto r = qa::read_frame(buf, frame, app->read);
    for (const auto& [model, n] : r.invalid) app->invalid[model] += n;
    if (app->scorer && !score(*app, r)) return GST_PAD_PROBE_OK;
    if (!r.has_detector) return GST_PAD_PROBE_OK;
    if (r.detector_inferred && app->info.frames_inferred++ == 0)
      g_printerr("qa-line: analysing (first frame at %" GST_TIME_FORMAT ")\n",
                 GST_TIME_ARGS(GST_BUFFER_PTS(buf)));
    if (r.detector_inferred) app->detector_ms.push_back(r.detector_ms);
    if (app->opt.gate && !at_gate(*app, buf, r.frame)) return GST_PAD_PROBE_OK;
    if (app->evidence) app->evidence->add_frame(buf, pad, r.frame, app->rules);
    if (app->plc) app->plc->see(r.frame, frame_time(*app, buf));
    report(*app, app->verdicts->add_frame(r.frame));
    if (app->evidence) app->evidence->tracks_ended(r.frame.ended);
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

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The anomaly model alone against the truth (qa_scores.h, anomaly_figures).
void print_anomaly_figures(const nlohmann::ordered_json& a) {
  g_printerr(
      "qa-line: anomaly model alone: part AUROC %.3f (median of each part's views, %d parts), "
      "view AUROC %.3f (%d views), verdicts %d of %d right (accuracy %.1f%%), map peak inside a "
      "defect box for %d of %d defective parts\n",
      a["part_auroc"].get<double>(), a["parts"].get<int>(), a["view_auroc"].get<double>(),
      a["views"].get<int>(), a["correct"].get<int>(), a["parts"].get<int>(),
      100 * a["accuracy"].get<double>(), a["peak_in_defect"].get<int>(),
      a["defective_parts"].get<int>());
}

// The detector's cost per frame of the stream (the figure inference-interval
// lowers) and, with --truth, the scores; also printed for a person.
nlohmann::ordered_json run_facts(App& app, bool score) {
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
  if (!score) return j;
  std::vector<std::string> wrong;
  const auto s =
      app.scorer->finish(app.verdict_of, app.verdicts->duplicate_ids(), &wrong, app.anomaly_of);
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
  if (s.contains("anomaly")) print_anomaly_figures(s["anomaly"]);
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

// Everything before the pipeline; the exit status if the run cannot start.
int prepare(App& app) {
  if (!qa::make_rules(app.opt, app.rules, app.read)) return 2;
  app.verdicts = std::make_unique<torchinfer::PartVerdicts>(app.rules);
  if (!open_truth(app) || !open_mqtt(app)) return 2;
  if (app.opt.evidence) app.evidence = std::make_unique<qa::QaEvidence>(app.opt);
  if (app.plc_opt.enabled) {
    try {
      app.plc = std::make_unique<qa::QaPlc>(
          app.plc_opt,
          std::vector<std::string>(app.rules.part_classes.begin(), app.rules.part_classes.end()));
    } catch (const std::exception& e) {
      g_printerr("qa-line: --plc: %s\n", e.what());
      return 2;
    }
  }
  return open_files(app);
}

// The pipeline with the app's probes on it; false (exit 2) if it cannot be
// built.
bool build(App& app) {
  std::string why;
  app.pipeline = qa::build_pipeline(app.opt, app.rules, app.video_fd, &why);
  if (!app.pipeline) {
    g_printerr("qa-line: cannot build the pipeline: %s\n", why.c_str());
    return false;
  }
  if (app.evidence && !app.evidence->attach(app.pipeline, &why)) {
    g_printerr("qa-line: cannot build the pipeline: %s\n", why.c_str());
    return false;
  }
  GstPad* analysed = src_pad(app.pipeline, "analysed");
  gst_pad_add_probe(analysed, GST_PAD_PROBE_TYPE_BUFFER, on_result, &app, nullptr);
  gst_object_unref(analysed);
  if (GstPad* annotated = src_pad(app.pipeline, "annotated")) {
    gst_pad_add_probe(annotated, GST_PAD_PROBE_TYPE_BUFFER, qa::Annotator::probe, &app.annotator,
                      nullptr);
    gst_object_unref(annotated);
  }
  return true;
}

// Plays the pipeline until EOS, an error, a truth mismatch or a second
// signal; leaves it in NULL, so no probe runs afterwards.
void run(App& app) {
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
}

// --gate: the summary's "gate" object, also printed for a person.
nlohmann::ordered_json gate_facts(const App& app) {
  const auto j = qa::gate_json(*app.opt.gate, app.gate, app.verdicts->counts().not_at_gate);
  std::string by;
  for (const auto& [label, n] : j["by_class"].items())
    by += (by.empty() ? "" : ", ") + label + " " + n["forward"].dump() + "/" + n["backward"].dump();
  g_printerr("qa-line: gate: %s forward, %s backward (%s forward/backward)",
             j["forward"].dump().c_str(), j["backward"].dump().c_str(),
             by.empty() ? "none" : by.c_str());
  for (const char* d : {"forward", "backward"}) {
    const auto& v = j["verdicts"][d];
    g_printerr("; %s: %s pass, %s reject, %s incomplete", d, v["pass"].dump().c_str(),
               v["reject"].dump().c_str(), v["incomplete"].dump().c_str());
  }
  g_printerr("; %d parts never crossed it\n", j["not_at_gate"].get<int>());
  return j;
}

// The summary's "invalid_results" (per model of the run) and, when there
// are some, a warning: those results judged nothing, so parts may be
// incomplete. True when there are some.
bool invalid_results(const App& app, nlohmann::ordered_json& facts) {
  auto& j = facts["invalid_results"] = nlohmann::ordered_json::object();
  std::int64_t total = 0;
  std::string by;
  for (const char* model : {"detector", "classifier", "anomaly", "segmenter"}) {
    const std::string m = model;
    const bool in_run = m == "detector" || (m == "classifier" ? app.read.classifier
                                            : m == "anomaly"  ? app.read.anomaly
                                                              : app.read.segmenter);
    const auto it = app.invalid.find(model);
    const std::int64_t n = it != app.invalid.end() ? it->second : 0;
    if (in_run) j[model] = n;
    total += n;
    if (n > 0) by += (by.empty() ? "" : ", ") + std::to_string(n) + " of the " + model;
  }
  if (total == 0) return false;
  g_printerr("qa-line: WARNING: %" G_GINT64_FORMAT
             " model results were NaN or infinite (%s) and "
             "judged nothing; %d parts incomplete; exit status %d\n",
             static_cast<gint64>(total), by.c_str(), app.verdicts->counts().incomplete,
             qa::kInvalidResultsExit);
  return true;
}

// The open parts decided, the counts, the scores and the summary line.
void report_run(App& app) {
  report(app, app.verdicts->flush());
  qa::print_counts(app.verdicts->counts(), app.info, app.rules.codes);
  nlohmann::ordered_json facts;
  try {
    facts = run_facts(app, truth_fits(app));
  } catch (const std::exception& e) {
    g_printerr("qa-line: error: cannot score against %s: %s\n", app.opt.truth.c_str(), e.what());
    app.rc = 1;
  }
  if (app.evidence) {
    app.evidence->finish();
    facts["evidence"] = app.evidence->summary();
  }
  if (app.opt.gate) facts["gate"] = gate_facts(app);
  if (app.rules.codes) facts["codes"] = qa::codes_facts(app.pipeline, app.verdicts->counts());
  if (app.plc) {
    bool lost = false;
    facts["plc"] = app.plc->finish(&lost);
    if (lost && app.rc == 0) app.rc = 1;
  }
  const bool invalid = invalid_results(app, facts);
  write_line(app, torchinfer::summary_json(app.verdicts->counts(), app.info, facts));
  // Every part was decided and written: lost evidence is its own status,
  // lost model results (the graver) another.
  if (app.evidence && app.evidence->report_losses() && app.rc == 0) app.rc = qa::kEvidenceLostExit;
  if (invalid && (app.rc == 0 || app.rc == qa::kEvidenceLostExit)) app.rc = qa::kInvalidResultsExit;
  if (app.opt.out_dir.empty()) return;
  const std::string snap = app.opt.out_dir + "/snapshot.png";
  std::string why;
  if (app.annotator.write_snapshot(snap, &why)) {
    g_printerr("qa-line: wrote %s/results.jsonl, %s/annotated.mkv, %s\n", app.opt.out_dir.c_str(),
               app.opt.out_dir.c_str(), snap.c_str());
  } else if (!why.empty()) {
    g_printerr("qa-line: error: %s; exit status 1\n", why.c_str());
    app.rc = 1;
  } else if (app.rc == 0) {
    g_printerr("qa-line: warning: no snapshot written to %s\n", snap.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  App app;
  bool help = false;
  if (!qa::take_plc_args(argc, argv, app.plc_opt, help)) return help ? 0 : 2;
  if (!qa::parse_args(argc, argv, app.opt)) return 2;
  gst_init(nullptr, nullptr);
  if (const int rc = prepare(app); rc != 0) return rc;
  if (!build(app)) return 2;
  run(app);
  if (app.gate_outside)
    app.rc = 2;  // a usage error found on the first frame: nothing to report
  else if (app.rc == 0 || app.info.frames > 0)
    report_run(app);
  close_mqtt(app);
  close_output(app);
  gst_object_unref(app.pipeline);
  if (app.video_fd >= 0) close(app.video_fd);  // fdsink leaves it open
  g_main_loop_unref(app.loop);
  return app.rc;
}
