// The QA-line demo: a conveyor clip stands in for a YUY2 factory camera;
// torchinfer runs the bundled defect detector, torchnms decodes the boxes,
// torchoverlay draws them in the camera format. Prints the detections of
// every frame, scores them against the clip's ground truth, and writes
// results.jsonl, annotated.mkv and snapshot.png. Also the reference example
// of reading torchinfer's metadata from an application.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/app_options.h"
#include "app/builder.h"
#include "common/box.h"
#include "common/file_check.h"
#include "common/json_file.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace app = torchinfer::app;

namespace {

struct Options {
  std::string model, clip, truth, out = "out/demo";
  bool quiet = false;
};

struct Scored {
  std::string label;
  double confidence = 0;
  torchinfer::Box box;  // frame pixels
  bool ignore = false;  // truth only: mostly out of view, neither hit nor miss
};

struct Run {
  Options opt;
  std::vector<std::vector<Scored>> truth;  // scored objects per frame
  std::vector<double> infer_ms, pre_ms;
  std::map<std::string, int> counts;  // detections per class
  int frames = 0, true_pos = 0, false_pos = 0, false_neg = 0;
  std::vector<Scored> current;
  int snapshot_score = -1;
  cv::Mat snapshot;
};

std::vector<std::vector<Scored>> load_truth(const std::string& path) {
  std::vector<std::vector<Scored>> out;
  if (path.empty()) return out;
  try {
    const auto j = torchinfer::read_json_file(path, "ground truth");
    for (const auto& f : j.at("frames")) {
      std::vector<Scored> objs;
      for (const auto& o : f.at("objects")) {
        const auto& b = o.at("bbox");
        objs.push_back({o.at("class").get<std::string>(),
                        1.0,
                        {b.at(0).get<double>(), b.at(1).get<double>(), b.at(2).get<double>(),
                         b.at(3).get<double>()},
                        o.value("ignore", false)});
      }
      out.push_back(std::move(objs));
    }
  } catch (const std::exception& e) {
    g_printerr("warning: ground truth '%s' not usable (%s); accuracy not reported\n", path.c_str(),
               e.what());
    out.clear();
  }
  return out;
}

// Greedy matching at IoU >= 0.5 by class, most confident detection first
// (VOC style: a detection of an object marked ignore counts for nothing).
void score(Run& run, const std::vector<Scored>& dets, const std::vector<Scored>& truth) {
  std::vector<bool> used(truth.size(), false);
  for (const Scored& d : dets) {  // sorted by confidence
    int best = -1;
    double best_iou = 0.5;
    for (std::size_t t = 0; t < truth.size(); ++t)
      if (!used[t] && truth[t].label == d.label &&
          torchinfer::iou(d.box, truth[t].box) >= best_iou) {
        best = static_cast<int>(t);
        best_iou = torchinfer::iou(d.box, truth[t].box);
      }
    if (best < 0) {
      run.false_pos++;
    } else if (!truth[best].ignore) {
      used[best] = true;
      run.true_pos++;
    }
  }
  for (std::size_t t = 0; t < truth.size(); ++t) run.false_neg += !used[t] && !truth[t].ignore;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

// Results leave torchnms here: read the metas, print, score.
GstPadProbeReturn on_result(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* run = static_cast<Run*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  const int n = run->frames++;
  GstTorchTensorMeta* tm = gst_buffer_get_torch_tensor_meta(buf);
  std::vector<Scored> dets;
  const double w = tm ? tm->frame_width : 640, h = tm ? tm->frame_height : 480;
  gst_torch::foreach_detection(buf, [&](GstVideoRegionOfInterestMeta*, const GstTorchDetection& d) {
    dets.push_back({d.label ? d.label : "?",
                    d.confidence,
                    {d.x_min * w, d.y_min * h, d.x_max * w, d.y_max * h}});
  });
  std::sort(dets.begin(), dets.end(),
            [](const Scored& a, const Scored& b) { return a.confidence > b.confidence; });
  if (tm) {
    run->infer_ms.push_back(tm->inference_ns / 1e6);
    run->pre_ms.push_back(tm->preprocess_ns / 1e6);
  }
  for (const Scored& d : dets) run->counts[d.label]++;
  if (n < static_cast<int>(run->truth.size())) score(*run, dets, run->truth[n]);
  if (!run->opt.quiet) {
    std::string text;
    for (const Scored& d : dets) {
      char one[96];
      std::snprintf(one, sizeof one, "%s%s %.2f [%.0f,%.0f,%.0f,%.0f]", text.empty() ? "" : ", ",
                    d.label.c_str(), d.confidence, d.box.x_min, d.box.y_min, d.box.x_max,
                    d.box.y_max);
      text += one;
    }
    g_print("frame %4d  pts %" GST_TIME_FORMAT "  inference %5.2f ms  %s\n", n,
            GST_TIME_ARGS(GST_BUFFER_PTS(buf)), tm ? tm->inference_ns / 1e6 : 0.0,
            text.empty() ? "-" : text.c_str());
  }
  run->current = std::move(dets);
  return GST_PAD_PROBE_OK;
}

// Keeps, as the snapshot, a clear frame (every detection confident) with
// the most kinds of defect, then the most objects.
GstPadProbeReturn on_annotated(GstPad* pad, GstPadProbeInfo* info, gpointer user) {
  auto* run = static_cast<Run*>(user);
  std::map<std::string, int> defects;
  bool clear = true;
  for (const Scored& d : run->current) {
    if (d.label != "bracket" && d.label != "washer") defects[d.label]++;
    clear = clear && d.confidence >= 0.7;
  }
  const int score = (clear ? 10000 : 0) + static_cast<int>(defects.size()) * 100 +
                    static_cast<int>(run->current.size());
  if (score <= run->snapshot_score) return GST_PAD_PROBE_OK;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  GstVideoInfo vi;
  const bool ok = caps && gst_video_info_from_caps(&vi, caps);
  if (caps) gst_caps_unref(caps);
  GstVideoFrame f;
  if (!ok || GST_VIDEO_INFO_FORMAT(&vi) != GST_VIDEO_FORMAT_YUY2 ||
      !gst_video_frame_map(&f, &vi, GST_PAD_PROBE_INFO_BUFFER(info), GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  cv::Mat yuy2(GST_VIDEO_FRAME_HEIGHT(&f), GST_VIDEO_FRAME_WIDTH(&f), CV_8UC2,
               GST_VIDEO_FRAME_PLANE_DATA(&f, 0), GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0));
  cv::cvtColor(yuy2, run->snapshot, cv::COLOR_YUV2BGR_YUY2);
  gst_video_frame_unmap(&f);
  run->snapshot_score = score;
  return GST_PAD_PROBE_OK;
}

bool parse_args(int argc, char** argv, Options& o) {
  gchar *model = nullptr, *clip = nullptr, *truth = nullptr, *out = nullptr;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model,
       "TorchScript detector (.pt, sidecar beside it)", "FILE"},
      {"clip", 'c', 0, G_OPTION_ARG_FILENAME, &clip, "MJPEG/Matroska clip to analyse", "FILE"},
      {"truth", 't', 0, G_OPTION_ARG_FILENAME, &truth,
       "Ground truth JSON (per-frame boxes) to score against", "FILE"},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Output folder (default out/demo)", "DIR"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Only print the summary", nullptr},
      {nullptr, 0, 0, G_OPTION_ARG_NONE, nullptr, nullptr, nullptr}};
  if (!app::parse_options(&argc, &argv, entries, "- torchinfer QA-line demo", "")) return false;
  app::take(model, o.model);
  app::take(clip, o.clip);
  app::take(truth, o.truth);
  app::take(out, o.out);
  o.quiet = quiet;
  if (o.model.empty() || o.clip.empty()) {
    g_printerr(
        "usage: torchinfer-demo --model FILE.pt --clip FILE.mkv [--truth FILE.json] [--out DIR]\n");
    return false;
  }
  return true;
}

// Not cv::imwrite: its open() would wait forever on a FIFO nobody reads.
bool write_snapshot(const std::string& path, const cv::Mat& image) {
  std::vector<std::uint8_t> png;
  try {
    if (!cv::imencode(".png", image, png))
      throw std::runtime_error("snapshot '" + path + "' cannot be encoded as PNG");
    torchinfer::write_output_file(path, "snapshot", std::string(png.begin(), png.end()));
  } catch (const std::exception& e) {
    g_printerr("ERROR: %s\n", e.what());
    return false;
  }
  return true;
}

// The annotated video's descriptor for fdsink, or -1 (said why): opened
// without blocking, since filesink's own open waits forever on a FIFO nobody
// reads. The caller closes it after the run.
int open_video(const std::string& path) {
  try {
    return torchinfer::open_output_file(path, "annotated video");
  } catch (const std::exception& e) {
    g_printerr("ERROR: %s\n", e.what());
    return -1;
  }
}

GstPad* pad_of(GstElement* pipeline, const char* element, const char* pad) {
  GstElement* e = gst_bin_get_by_name(GST_BIN(pipeline), element);
  GstPad* p = gst_element_get_static_pad(e, pad);
  gst_object_unref(e);
  return p;
}

// clip (MJPEG) ! YUY2 ! torchinfer name=infer ! torchnms name=nms
// ! torchmetaconvert ! torchoverlay name=overlay ! videoconvert ! jpegenc
// ! matroskamux ! fdsink, every setting a property value.
GstElement* build_pipeline(const Options& o, int video_fd, std::string* why) {
  GstElement* pipeline = torchinfer::app::new_pipeline("demo");
  torchinfer::app::Builder b(pipeline, why);
  GstElement* source = torchinfer::app::mjpeg_clip_as_yuy2(b, o.clip);
  GstElement* infer = b.add("torchinfer", "infer");
  GstElement* nms = b.add("torchnms", "nms");
  GstElement* json = b.add("torchmetaconvert");
  GstElement* overlay = b.add("torchoverlay", "overlay");
  GstElement* convert = b.add("videoconvert");
  GstElement* jpeg = b.add("jpegenc");
  GstElement* mux = b.add("matroskamux");
  GstElement* file = b.add("fdsink");
  if (!b.failed()) {
    g_object_set(infer, "model", o.model.c_str(), nullptr);
    torchinfer::app::set_arg(infer, "stats-interval", "100000");
    g_object_set(json, "location", (o.out + "/results.jsonl").c_str(), nullptr);
    g_object_set(overlay, "show-hud", TRUE, nullptr);
    torchinfer::app::set_arg(jpeg, "quality", "85");
    g_object_set(file, "fd", video_fd, nullptr);
    b.link({source, infer, nms, json, overlay, convert, jpeg, mux, file});
  }
  if (b.failed()) {
    gst_object_unref(pipeline);
    return nullptr;
  }
  return pipeline;
}

// What the run measured beyond the probes' counts.
struct Measured {
  double wall_s = 0, load_ms = 0, lat50 = 0, lat99 = 0;
  std::string precision = "?";
};

// Plays the pipeline to its end (EOS or an error, said); returns the exit
// status so far and the wall time in m.
int play_to_end(GstElement* pipeline, Measured& m) {
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
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  return rc;
}

// torchinfer's own figures, read before the pipeline stops.
void read_infer_stats(GstElement* pipeline, Measured& m) {
  GstElement* infer = gst_bin_get_by_name(GST_BIN(pipeline), "infer");
  gchar* precision = nullptr;
  g_object_get(infer, "load-time", &m.load_ms, "active-precision", &precision, "latency-p50",
               &m.lat50, "latency-p99", &m.lat99, nullptr);
  if (precision) m.precision = precision;
  g_free(precision);
  gst_object_unref(infer);
}

void print_summary(const Run& run, const Measured& m) {
  const std::string& out = run.opt.out;
  g_print("\n== torchinfer demo summary ==\n");
  g_print("model %s (%s; load + optimise + warm-up %.0f ms), clip %s\n", run.opt.model.c_str(),
          m.precision.c_str(), m.load_ms, run.opt.clip.c_str());
  g_print(
      "frames: %d in %.2f s wall, %.1f fps end to end (decode, inference, NMS, overlay, "
      "encode)\n",
      run.frames, m.wall_s, m.wall_s > 0 ? run.frames / m.wall_s : 0.0);
  g_print(
      "latency per frame: preprocess p50 %.2f ms; inference p50 %.2f ms, p99 %.2f ms; "
      "torchinfer in->out p50 %.2f ms, p99 %.2f ms\n",
      percentile(run.pre_ms, 0.5), percentile(run.infer_ms, 0.5), percentile(run.infer_ms, 0.99),
      m.lat50, m.lat99);
  g_print("detections per class:");
  for (const auto& [label, n] : run.counts) g_print(" %s %d", label.c_str(), n);
  g_print("\n");
  if (!run.truth.empty()) {
    const int found = run.true_pos + run.false_neg, reported = run.true_pos + run.false_pos;
    g_print(
        "against ground truth (IoU >= 0.5, same class): %d of %d objects found (recall "
        "%.1f%%), %d of %d detections correct (precision %.1f%%)\n",
        run.true_pos, found, found ? 100.0 * run.true_pos / found : 0.0, run.true_pos, reported,
        reported ? 100.0 * run.true_pos / reported : 0.0);
  }
  g_print("wrote %s/results.jsonl, %s/annotated.mkv%s\n", out.c_str(), out.c_str(),
          run.snapshot.empty() ? "" : (", " + out + "/snapshot.png").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Run run;
  if (!parse_args(argc, argv, run.opt)) return 2;
  gst_init(nullptr, nullptr);
  g_mkdir_with_parents(run.opt.out.c_str(), 0755);
  run.truth = load_truth(run.opt.truth);

  // The decoded MJPEG is converted to YUY2 once, as a factory camera sends
  // it; from there torchinfer, torchnms and torchoverlay work in YUY2.
  const std::string out = run.opt.out;
  const int video_fd = open_video(out + "/annotated.mkv");
  if (video_fd < 0) return 1;
  std::string why;
  GstElement* pipeline = build_pipeline(run.opt, video_fd, &why);
  if (!pipeline) {
    g_printerr("ERROR: could not build the pipeline: %s\n", why.c_str());
    return 1;
  }
  GstPad* nms_src = pad_of(pipeline, "nms", "src");
  gst_pad_add_probe(nms_src, GST_PAD_PROBE_TYPE_BUFFER, on_result, &run, nullptr);
  GstPad* overlay_src = pad_of(pipeline, "overlay", "src");
  gst_pad_add_probe(overlay_src, GST_PAD_PROBE_TYPE_BUFFER, on_annotated, &run, nullptr);

  Measured m;
  int rc = play_to_end(pipeline, m);
  read_infer_stats(pipeline, m);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  close(video_fd);

  if (!run.snapshot.empty() && !write_snapshot(out + "/snapshot.png", run.snapshot)) {
    run.snapshot.release();
    rc = 1;
  }
  print_summary(run, m);
  gst_object_unref(nms_src);
  gst_object_unref(overlay_src);
  gst_object_unref(pipeline);
  return rc;
}
