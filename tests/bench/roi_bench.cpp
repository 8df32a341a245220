// roi-bench: figures of torchinfer inference-region=roi-list, as medians of
// rounds measured side by side in one run (the machine is shared: only the
// ratios mean much).
//
//   throughput --model M.pt --width W --height H [--batch 8] [--objects 16]
//       [--frames 40] [--rounds 5] [--threads 2] [--box 128]
//       [--preprocess-on auto|streaming-thread|inference-threads]
//       Objects/s through torchinfer in roi-list mode (appsrc -> torchinfer
//       -> fakesink, NV12 1280x720 frames with `objects` ROIs of box x box
//       px) vs the bare classifier: Engine::run on ready batches of the same
//       size and threads. Rounds alternate element and bare. --region
//       full-frame pushes frames x objects whole frames instead (the same
//       element without ROIs, for comparison).
//   crop [--out 96] [--box 128] [--iters 200]
//       Preprocessing one object (a box x box crop of an NV12 1920x1080
//       frame, odd corner) vs the whole frame, both to out x out, interleaved.
// --rounds 1 --frames 2 (throughput) and --iters 2 (crop) are the smoke runs
// meson does.
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench_args.h"
#include "common/aligned_buffer.h"
#include "engine/engine.h"
#include "frames.h"
#include "preprocess/preprocess.h"

using namespace torchinfer;
using Clock = std::chrono::steady_clock;

namespace {

bench::Args args;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Counts buffers reaching the sink.
struct Counter {
  std::mutex mu;
  std::condition_variable cv;
  long n = 0;
  static void handoff(GstElement*, GstBuffer*, GstPad*, gpointer self) {
    auto* c = static_cast<Counter*>(self);
    std::lock_guard<std::mutex> lk(c->mu);
    ++c->n;
    c->cv.notify_all();
  }
  void wait_for(long target) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return n >= target; });
  }
};

int throughput() {
  const std::string model = args.str("model", "");
  const int batch = args.num("batch", 8), objects = args.num("objects", 16),
            frames = args.num("frames", 40);
  const int rounds = args.num("rounds", 5), threads = args.num("threads", 2),
            box = args.num("box", 128);
  const int W = 1280, H = 720;
  // --region full-frame: the same number of images as whole frames, for
  // comparison (no ROIs; each frame is one image).
  const bool full = args.str("region", "roi-list") == "full-frame";
  const std::string line =
      "appsrc name=src is-live=false format=time ! torchinfer name=ti model=" + model +
      " inference-region=" + (full ? "full-frame" : "roi-list") +
      " drop-policy=block batch-size=" + std::to_string(batch) +
      " threads=" + std::to_string(threads) +
      " preprocess-on=" + args.str("preprocess-on", "auto") + " ! fakesink name=sink sync=false signal-handoffs=true";
  GError* err = nullptr;
  GstElement* pipe = gst_parse_launch(line.c_str(), &err);
  if (!pipe) {
    std::fprintf(stderr, "pipeline: %s\n", err ? err->message : "?");
    return 1;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipe), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, W, H);
  GstCaps* caps = gst_video_info_to_caps(&info);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  Counter counter;
  g_signal_connect(sink, "handoff", G_CALLBACK(Counter::handoff), &counter);
  if (gst_element_set_state(pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    std::fprintf(stderr, "cannot start the pipeline (model %s)\n", model.c_str());
    return 1;
  }
  // A frame with `objects` ROIs spread over it; copies carry the ROI metas.
  GstBuffer* tmpl = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  {
    GstMapInfo m;
    gst_buffer_map(tmpl, &m, GST_MAP_WRITE);
    for (gsize i = 0; i < m.size; ++i)
      m.data[i] = static_cast<guint8>((i * 7 + (i / 1280) * 3) & 0xFF);
    gst_buffer_unmap(tmpl, &m);
  }
  for (int i = 0; i < (full ? 0 : objects); ++i) {
    const guint x = static_cast<guint>((i * 157 + 3) % (W - box)),
                y = static_cast<guint>((i * 89 + 1) % (H - box));
    gst_buffer_add_video_region_of_interest_meta(tmpl, "part", x, y, box, box)->id = i;
  }

  EngineOptions eo;
  eo.model_path = model;
  eo.input_width = args.num("width", 96);
  eo.input_height = args.num("height", 96);
  eo.threads = threads;
  eo.warmup_batch_sizes = {batch};
  eo.precision = Precision::kFp32;
  Engine engine(eo);
  const std::size_t slot = static_cast<std::size_t>(eo.input_width) * eo.input_height * 3;
  AlignedBuffer input(slot * batch * sizeof(float));
  std::fill_n(static_cast<float*>(input.data()), slot * batch, 0.5f);
  const int n_batches = frames * objects / batch;

  std::vector<double> element_ops, bare_ops, ratios;  // ratios: of each round's pair
  GstClockTime pts = 0;
  long sent = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    const int pushes = full ? frames * objects : frames;
    for (int f = 0; f < pushes; ++f) {
      GstBuffer* b = gst_buffer_copy(tmpl);
      GST_BUFFER_PTS(b) = pts;
      pts += 33 * GST_MSECOND;
      GstFlowReturn ret;
      g_signal_emit_by_name(src, "push-buffer", b, &ret);
      gst_buffer_unref(b);
    }
    sent += pushes;
    counter.wait_for(sent);
    element_ops.push_back(frames * objects / (ms_since(t0) / 1000.0));

    const auto t1 = Clock::now();
    for (int k = 0; k < n_batches; ++k) engine.run(input.data(), batch);
    bare_ops.push_back(n_batches * batch / (ms_since(t1) / 1000.0));
    ratios.push_back(element_ops.back() / bare_ops.back());
  }
  GstStructure* stats = nullptr;
  g_object_get(gst_bin_get_by_name(GST_BIN(pipe), "ti"), "stats", &stats, nullptr);
  double fill = 0;
  if (stats) gst_structure_get_double(stats, "mean-batch-fill", &fill);
  std::printf(
      "%s objects/s %.1f | bare classifier images/s %.1f | ratio %.3f (median of per-round "
      "ratios) | batch %d, %d "
      "objects/frame, %d frames x %d rounds, threads %d, mean batch fill %.2f\n",
      full ? "full-frame" : "roi-list", median(element_ops), median(bare_ops), median(ratios),
      batch, objects, frames, rounds, threads, fill);
  if (stats) gst_structure_free(stats);
  gst_buffer_unref(tmpl);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipe);
  return 0;
}

int crop() {
  const int out = args.num("out", 96), box = args.num("box", 128), iters = args.num("iters", 200);
  const test::OwnedFrame f =
      test::make_frame(test::make_rgb_image(1920, 1080, 3), PixelFormat::kNV12);
  PreprocessOptions o;
  o.out_width = o.out_height = out;
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  auto* d = static_cast<float*>(dst.data());
  const Crop c{301, 157, box, box};  // odd corner, as ROIs come
  std::vector<double> full_ms, crop_ms;
  for (int i = 0; i < iters; ++i) {
    auto t = Clock::now();
    pre.run(f.view, d);
    full_ms.push_back(ms_since(t));
    t = Clock::now();
    pre.run(f.view, c, d);
    crop_ms.push_back(ms_since(t));
  }
  std::printf(
      "preprocess to %dx%d: object crop %dx%d %.4f ms | full NV12 1920x1080 frame %.4f ms | crop / "
      "full %.3f (%d iterations, medians)\n",
      out, out, box, box, median(crop_ms), median(full_ms), median(crop_ms) / median(full_ms),
      iters);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: roi-bench throughput|crop --key value ...\n");
    return 2;
  }
  args.parse(argc, argv);
  const std::string mode = argv[1];
  try {
    if (mode == "throughput") return throughput();
    if (mode == "crop") return crop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roi-bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
