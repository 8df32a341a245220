// obb-deskew-bench: the second stage on rotated parts through the plugin.
// Feeds raw frames with known rotated boxes (as torchnms decoder=yolov8-obb
// attaches them: a detection ROI around the part plus its "rotated_box"
// param, written with the installed meta API) through two torchinfer
// elements in roi-list mode, one with deskew=true and one with deskew=false,
// in one pipeline:
//
//   appsrc (RGB frames + ROIs) ! torchinfer name=deskewed deskew=true
//     ! torchinfer name=axis-aligned deskew=false ! appsink
//
// and prints each ROI's two classifications; then times the two crops of
// every ROI with the core preprocessing alone (the element's own crop
// plan, src/stream/regions.h), interleaved, from the frames as RGB, NV12
// and YUY2, and prints the medians.
//
//   obb-deskew-bench --frames F.rgb --rois R.txt --model M.pt --out P.txt
//       [--width 640] [--height 480] [--batch 4] [--threads 2] [--iters 5]
//
// F.rgb: the frames, packed RGB, one after the other. R.txt: one ROI a line,
// "frame x0 y0 x1 y1 cx cy width height angle label" (frame pixels; x0..y1
// the axis-aligned box, cx..angle the rotated box, angle in degrees
// clockwise). P.txt: one line per ROI in the same order, "frame roi
// deskewed_id deskewed_confidence axis_id axis_confidence" (-1 when the ROI
// got no classification). tests/bench/obb_deskew_accuracy.py writes F and R,
// reads P and scores it.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/torchinfer/torchinfer-helpers.h>
#include <gst/torchinfer/torchinfer-meta.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "common/aligned_buffer.h"
#include "frames.h"
#include "preprocess/preprocess.h"
#include "stream/regions.h"

using namespace torchinfer;
using Clock = std::chrono::steady_clock;

namespace {

bench::Args args;

struct Roi {
  int frame = 0;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  GstTorchRotatedBox rotated{};
  std::string label;
};

std::vector<Roi> read_rois(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Roi> rois;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ss(line);
    Roi r;
    GstTorchRotatedBox& b = r.rotated;
    if (!(ss >> r.frame >> r.x0 >> r.y0 >> r.x1 >> r.y1 >> b.cx >> b.cy >> b.width >> b.height >>
          b.angle >> r.label))
      throw std::runtime_error("bad ROI line: " + line);
    rois.push_back(r);
  }
  return rois;
}

std::vector<std::uint8_t> read_frames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

GstElement* make(const char* factory, const char* name) {
  GstElement* e = gst_element_factory_make(factory, name);
  if (!e) throw std::runtime_error(std::string("no element ") + factory);
  return e;
}

GstElement* classifier(const char* name, bool deskew) {
  GstElement* e = make("torchinfer", name);
  g_object_set(e, "model", args.str("model", "").c_str(), "deskew", deskew ? TRUE : FALSE,
               "batch-size", args.num("batch", 4), "threads", args.num("threads", 2), nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "inference-region", "roi-list");
  // fp32 as the numpy reference runs: precision=auto picks bf16 by timing on
  // an AMX CPU, and its confidences then differ by ~5e-3.
  gst_util_set_object_arg(G_OBJECT(e), "precision", args.str("precision", "fp32").c_str());
  return e;
}

// The frame's buffer with its ROIs attached, as torchnms yolov8-obb attaches them.
GstBuffer* frame_buffer(const std::vector<std::uint8_t>& frames, const std::vector<Roi>& rois,
                        int k, int w, int h) {
  const std::size_t size = static_cast<std::size_t>(w) * h * 3;
  GstBuffer* buf = gst_buffer_new_memdup(frames.data() + k * size, size);
  GST_BUFFER_PTS(buf) = gst_util_uint64_scale(k, GST_SECOND, 30);
  GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
  for (const Roi& r : rois) {
    if (r.frame != k) continue;
    GstVideoRegionOfInterestMeta* roi =
        gst_buffer_add_torch_detection(buf, r.label.c_str(), 0, 1.0, r.x0, r.y0, r.x1, r.y1,
                                       static_cast<guint>(w), static_cast<guint>(h));
    if (!roi || !gst_torch_roi_add_rotated_box(roi, &r.rotated))
      throw std::runtime_error("cannot attach ROI on frame " + std::to_string(k));
  }
  return buf;
}

void classification_of(GstVideoRegionOfInterestMeta* roi, const char* element, int* id,
                       double* conf) {
  const GstStructure* s = gst_torch_roi_get_classification(roi, element);
  *id = -1, *conf = 0;
  if (s && gst_structure_get_int(s, "label_id", id))
    gst_structure_get_double(s, "confidence", conf);
}

// Pulls every frame from the sink and writes its ROIs' two results.
int write_results(GstElement* sink, std::FILE* out) {
  int lines = 0;
  while (GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink))) {
    GstBuffer* buf = gst_sample_get_buffer(sample);
    const int frame =
        static_cast<int>(gst_util_uint64_scale_round(GST_BUFFER_PTS(buf), 30, GST_SECOND));
    int n = 0;
    gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
      int di, ai;
      double dc, ac;
      classification_of(roi, "deskewed", &di, &dc);
      classification_of(roi, "axis-aligned", &ai, &ac);
      std::fprintf(out, "%d %d %d %.6f %d %.6f\n", frame, n++, di, dc, ai, ac);
      ++lines;
    });
    gst_sample_unref(sample);
  }
  return lines;
}

int run_pipeline(const std::vector<std::uint8_t>& frames, const std::vector<Roi>& rois, int w,
                 int h, std::FILE* out) {
  const int count = static_cast<int>(frames.size() / (static_cast<std::size_t>(w) * h * 3));
  GstElement* pipe = gst_pipeline_new("obb-deskew");
  GstElement* src = make("appsrc", "src");
  GstElement* sink = make("appsink", "sink");
  GstCaps* caps =
      gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "RGB", "width", G_TYPE_INT, w,
                          "height", G_TYPE_INT, h, "framerate", GST_TYPE_FRACTION, 30, 1, nullptr);
  g_object_set(src, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE, "max-bytes",
               static_cast<guint64>(8) * w * h * 3, nullptr);
  gst_caps_unref(caps);
  g_object_set(sink, "sync", FALSE, nullptr);
  GstElement* deskewed = classifier("deskewed", true);
  GstElement* axis = classifier("axis-aligned", false);
  gst_bin_add_many(GST_BIN(pipe), src, deskewed, axis, sink, nullptr);
  if (!gst_element_link_many(src, deskewed, axis, sink, nullptr))
    throw std::runtime_error("cannot link the pipeline");
  if (gst_element_set_state(pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    throw std::runtime_error("the pipeline does not start (model?)");
  // Pushing blocks when appsrc is full: push from a second thread while
  // this one drains the sink.
  std::thread pusher([&] {
    for (int k = 0; k < count; ++k)
      gst_app_src_push_buffer(GST_APP_SRC(src), frame_buffer(frames, rois, k, w, h));
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  });
  const int lines = write_results(sink, out);
  pusher.join();
  GstBus* bus = gst_element_get_bus(pipe);
  GstMessage* err = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipe);
  if (err) {
    gst_message_unref(err);
    throw std::runtime_error("the pipeline posted an error");
  }
  return lines;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The element's crop plan for one ROI (padding 0.1 as the sidecar says,
// clipping, deskew).
RegionResult plan(const Roi& r, bool deskew, int w, int h) {
  RegionOfInterest roi;
  roi.x = static_cast<std::int64_t>(std::floor(r.x0));
  roi.y = static_cast<std::int64_t>(std::floor(r.y0));
  roi.width = static_cast<std::int64_t>(std::ceil(r.x1)) - roi.x;
  roi.height = static_cast<std::int64_t>(std::ceil(r.y1)) - roi.y;
  roi.rotated =
      RotatedBox{r.rotated.cx, r.rotated.cy, r.rotated.width, r.rotated.height, r.rotated.angle};
  RegionOptions opts;
  opts.padding = 0.1;
  opts.deskew = deskew;
  return plan_region(roi, opts, w, h);
}

// Both crops of every ROI, each preprocessed to 96x96 by the same core code
// from the frame in `format` (made from the RGB frame as a camera would
// send it, tests/common/frames.h), interleaved; medians per crop.
void time_crops(const std::vector<std::uint8_t>& frames, const std::vector<Roi>& rois, int w, int h,
                PixelFormat format) {
  PreprocessOptions o;
  o.out_width = o.out_height = 96;
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  auto* d = static_cast<float*>(dst.data());
  std::vector<double> ms[2];
  const std::size_t frame_bytes = static_cast<std::size_t>(w) * h * 3;
  for (std::size_t a = 0; a < rois.size();) {
    std::size_t b = a;
    while (b < rois.size() && rois[b].frame == rois[a].frame) ++b;
    // make_frame only reads the image.
    const cv::Mat rgb(h, w, CV_8UC3,
                      const_cast<std::uint8_t*>(frames.data() + rois[a].frame * frame_bytes));
    const test::OwnedFrame f = test::make_frame(rgb, format);
    for (int it = 0; it < args.num("iters", 5); ++it)
      for (std::size_t k = a; k < b; ++k)
        for (bool deskew : {false, true}) {
          const RegionResult p = plan(rois[k], deskew, w, h);
          const auto t = Clock::now();
          pre.run(f.view, p.box, d);
          ms[deskew].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
        }
    a = b;
  }
  std::printf(
      "crop to 96x96 per ROI (%s %dx%d, %zu crops each, medians): axis-aligned %.4f ms | "
      "deskewed %.4f ms | deskewed / axis-aligned %.2f\n",
      to_string(format), w, h, ms[0].size(), median(ms[0]), median(ms[1]),
      median(ms[1]) / median(ms[0]));
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  std::vector<char*> argv_with_mode(argv, argv + argc);  // Args skips a mode word
  argv_with_mode.insert(argv_with_mode.begin() + 1, argv[0]);
  args.parse(argc + 1, argv_with_mode.data());
  const int w = args.num("width", 640), h = args.num("height", 480);
  if (!args.has("frames") || !args.has("rois") || !args.has("model") || !args.has("out")) {
    std::fprintf(stderr,
                 "usage: obb-deskew-bench --frames F.rgb --rois R.txt --model M.pt "
                 "--out P.txt [--width 640 --height 480 --batch 4 --threads 2 --iters 5]\n");
    return 2;
  }
  try {
    const std::vector<std::uint8_t> frames = read_frames(args.str("frames", ""));
    const std::vector<Roi> rois = read_rois(args.str("rois", ""));
    std::FILE* out = std::fopen(args.str("out", "").c_str(), "w");
    if (!out) throw std::runtime_error("cannot write " + args.str("out", ""));
    const int lines = run_pipeline(frames, rois, w, h, out);
    std::fclose(out);
    std::printf("%d ROIs classified both ways (%zu given)\n", lines, rois.size());
    if (args.num("iters", 5) > 0)
      for (PixelFormat f : {PixelFormat::kRGB, PixelFormat::kNV12, PixelFormat::kYUY2})
        time_crops(frames, rois, w, h, f);
    return lines == static_cast<int>(rois.size()) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "obb-deskew-bench: %s\n", e.what());
    return 1;
  }
}
