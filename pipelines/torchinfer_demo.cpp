// The QA-line demo: clip -> torchinfer -> JSON + annotated video + snapshot,
// printing one line per frame and a summary. Also the reference example of
// embedding torchinfer in an application and reading its metadata.
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "gst/torchinfer/torchinfer-meta.h"

namespace {

struct Options {
  std::string model, clip, truth, out = "out/demo";
  bool quiet = false;
};

struct Run {
  Options opt;
  GstElement* overlay = nullptr;
  std::vector<std::string> truth;
  std::vector<double> infer_ms, pre_ms;
  std::map<std::string, int> counts;
  int frames = 0, agree = 0, compared = 0;
  int snapshot_score = -1;  // best frame so far for the snapshot
  cv::Mat snapshot;
  std::string current_label;
  double current_conf = 0;
};

std::vector<std::string> load_truth(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    g_printerr("warning: ground truth '%s' not readable; accuracy not reported\n", path.c_str());
    return out;
  }
  const auto j = nlohmann::json::parse(in, nullptr, false);
  const auto& frames = j.is_object() && j.contains("frames") ? j["frames"] : j;
  if (!frames.is_array()) return out;
  // A null label marks a frame that must not be scored (part half in view).
  for (const auto& f : frames) {
    const nlohmann::json* v = &f;
    if (f.is_object()) v = f.contains("label") ? &f["label"] : f.contains("class") ? &f["class"] : nullptr;
    out.push_back(v && v->is_string() ? v->get<std::string>() : std::string());
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

// Results leave torchinfer here: read the metas, print, label the overlay.
GstPadProbeReturn on_result(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* run = static_cast<Run*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  const int n = run->frames++;
  GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(buf);
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  std::string label = "(no result)";
  double conf = 0;
  if (cm) {
    const GstStructure* s = gst_custom_meta_get_structure(cm);
    label = gst_structure_get_string(s, "label");
    gst_structure_get_double(s, "confidence", &conf);
  }
  if (tm) {
    run->infer_ms.push_back(tm->inference_ns / 1e6);
    run->pre_ms.push_back(tm->preprocess_ns / 1e6);
  }
  run->counts[label]++;
  std::string verdict;
  if (n < static_cast<int>(run->truth.size()) && !run->truth[n].empty()) {
    run->compared++;
    const bool ok = run->truth[n] == label;
    run->agree += ok;
    verdict = ok ? "  ok" : "  MISS (truth " + run->truth[n] + ")";
  }
  if (!run->opt.quiet)
    g_print("frame %4d  pts %" GST_TIME_FORMAT
            "  %-16s %5.1f%%  preprocess %.2f ms  inference %.2f ms%s\n",
            n, GST_TIME_ARGS(GST_BUFFER_PTS(buf)), label.c_str(), conf * 100,
            tm ? tm->preprocess_ns / 1e6 : 0.0, tm ? tm->inference_ns / 1e6 : 0.0, verdict.c_str());
  char text[160];
  std::snprintf(text, sizeof text, "frame %d: %s %.0f%%  (inference %.1f ms)", n, label.c_str(),
                conf * 100, tm ? tm->inference_ns / 1e6 : 0.0);
  g_object_set(run->overlay, "text", text, nullptr);
  run->current_label = label;
  run->current_conf = conf;
  return GST_PAD_PROBE_OK;
}

// Keep the most confident defect frame (or any frame) as the snapshot.
GstPadProbeReturn on_annotated(GstPad* pad, GstPadProbeInfo* info, gpointer user) {
  auto* run = static_cast<Run*>(user);
  const bool defect = run->current_label.find("defect") != std::string::npos;
  const int score = static_cast<int>(run->current_conf * 100) + (defect ? 1000 : 0);
  if (score <= run->snapshot_score) return GST_PAD_PROBE_OK;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  GstVideoInfo vi;
  const bool ok = caps && gst_video_info_from_caps(&vi, caps);
  if (caps) gst_caps_unref(caps);
  GstVideoFrame f;
  if (!ok || !gst_video_frame_map(&f, &vi, GST_PAD_PROBE_INFO_BUFFER(info), GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  cv::Mat rgb(GST_VIDEO_FRAME_HEIGHT(&f), GST_VIDEO_FRAME_WIDTH(&f), CV_8UC3,
              GST_VIDEO_FRAME_PLANE_DATA(&f, 0), GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0));
  cv::cvtColor(rgb, run->snapshot, cv::COLOR_RGB2BGR);
  gst_video_frame_unmap(&f);
  run->snapshot_score = score;
  return GST_PAD_PROBE_OK;
}

bool parse_args(int argc, char** argv, Options& o) {
  gchar *model = nullptr, *clip = nullptr, *truth = nullptr, *out = nullptr;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model, "TorchScript model (.pt, sidecar beside it)",
       "FILE"},
      {"clip", 'c', 0, G_OPTION_ARG_FILENAME, &clip, "MJPEG/Matroska clip to analyse", "FILE"},
      {"truth", 't', 0, G_OPTION_ARG_FILENAME, &truth,
       "Ground truth JSON (per-frame labels) to score against", "FILE"},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Output folder (default out/demo)", "DIR"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Only print the summary", nullptr},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  GOptionContext* ctx = g_option_context_new("- torchinfer QA-line demo");
  g_option_context_add_main_entries(ctx, entries, nullptr);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError* err = nullptr;
  const bool ok = g_option_context_parse(ctx, &argc, &argv, &err);
  g_option_context_free(ctx);
  if (!ok) {
    g_printerr("%s\n", err->message);
    g_error_free(err);
    return false;
  }
  if (model) o.model = model;
  if (clip) o.clip = clip;
  if (truth) o.truth = truth;
  if (out) o.out = out;
  o.quiet = quiet;
  g_free(model);
  g_free(clip);
  g_free(truth);
  g_free(out);
  if (o.model.empty() || o.clip.empty()) {
    g_printerr(
        "usage: torchinfer-demo --model FILE.pt --clip FILE.mkv [--truth FILE.json] [--out DIR]\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Run run;
  if (!parse_args(argc, argv, run.opt)) return 2;
  gst_init(nullptr, nullptr);
  g_mkdir_with_parents(run.opt.out.c_str(), 0755);
  run.truth = load_truth(run.opt.truth);

  // The clip stands in for a YUY2 factory camera: decoded MJPEG is converted
  // to YUY2 once, then torchinfer takes the camera format directly.
  const std::string out = run.opt.out;
  gchar* line = g_strdup_printf(
      "filesrc location=\"%s\" ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2 "
      "! "
      "torchinfer name=infer model=\"%s\" ! torchmetaconvert location=\"%s/results.jsonl\" ! "
      "textoverlay name=overlay font-desc=\"Sans 14\" valignment=top halignment=left "
      "shaded-background=true ! "
      "videoconvert ! video/x-raw,format=RGB ! tee name=t ! queue ! videoconvert ! jpegenc "
      "quality=85 ! "
      "matroskamux ! filesink location=\"%s/annotated.mkv\"",
      run.opt.clip.c_str(), run.opt.model.c_str(), out.c_str(), out.c_str());
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(line, &err);
  g_free(line);
  if (!pipeline || err) {
    g_printerr("ERROR: could not build the pipeline: %s\n", err ? err->message : "unknown");
    return 1;
  }
  GstElement* infer = gst_bin_get_by_name(GST_BIN(pipeline), "infer");
  run.overlay = gst_bin_get_by_name(GST_BIN(pipeline), "overlay");
  GstElement* tee = gst_bin_get_by_name(GST_BIN(pipeline), "t");
  GstPad* infer_src = gst_element_get_static_pad(infer, "src");
  gst_pad_add_probe(infer_src, GST_PAD_PROBE_TYPE_BUFFER, on_result, &run, nullptr);
  GstPad* tee_sink = gst_element_get_static_pad(tee, "sink");
  gst_pad_add_probe(tee_sink, GST_PAD_PROBE_TYPE_BUFFER, on_annotated, &run, nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  int rc = 0;
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) rc = 1;
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError* e = nullptr;
    gst_message_parse_error(msg, &e, nullptr);
    g_printerr("ERROR: %s\n", e->message);
    g_error_free(e);
    rc = 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (msg) gst_message_unref(msg);
  double load_ms = 0;
  g_object_get(infer, "load-time", &load_ms, nullptr);
  gst_element_set_state(pipeline, GST_STATE_NULL);

  if (!run.snapshot.empty()) cv::imwrite(out + "/snapshot.png", run.snapshot);
  g_print("\n== torchinfer demo summary ==\n");
  g_print("model %s (load + optimise + warm-up %.0f ms), clip %s\n", run.opt.model.c_str(), load_ms,
          run.opt.clip.c_str());
  g_print("frames: %d in %.2f s wall, %.1f fps end to end (decode, inference, overlay, encode)\n",
          run.frames, wall, wall > 0 ? run.frames / wall : 0.0);
  g_print(
      "latency per frame: preprocess p50 %.2f ms; inference p50 %.2f ms, p99 %.2f ms, mean %.2f "
      "ms\n",
      percentile(run.pre_ms, 0.5), percentile(run.infer_ms, 0.5), percentile(run.infer_ms, 0.99),
      run.infer_ms.empty() ? 0.0 : [&] {
        double s = 0;
        for (double v : run.infer_ms) s += v;
        return s / run.infer_ms.size();
      }());
  g_print("per-class counts:");
  for (const auto& [label, n] : run.counts) g_print(" %s %d", label.c_str(), n);
  g_print("\n");
  if (run.compared > 0)
    g_print("agreement with ground truth: %d/%d (%.1f%%)\n", run.agree, run.compared,
            100.0 * run.agree / run.compared);
  g_print("wrote %s/results.jsonl, %s/annotated.mkv%s\n", out.c_str(), out.c_str(),
          run.snapshot.empty() ? "" : (", " + out + "/snapshot.png").c_str());

  gst_object_unref(bus);
  gst_object_unref(infer_src);
  gst_object_unref(tee_sink);
  gst_object_unref(tee);
  gst_object_unref(run.overlay);
  gst_object_unref(infer);
  gst_object_unref(pipeline);
  return rc;
}
