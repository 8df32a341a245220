// Baseline (c) of tests/bench/compare.sh: the C++ application users write
// first, kept deliberately naive because it is what torchinfer is measured
// against. GStreamer converts and scales (videoconvert ! videoscale ! RGB
// appsink), torch::jit::load + eval with no freeze / optimize_for_inference,
// uint8 -> float normalisation with tensor ops, forward at batch 1.
//
//   naive-app MODEL.pt SRC_WxH IN_WxH FRAMES LIVE(0|1) [MEAN3 STD3]
//
// Prints one key=value line like naive_app.py: fps, p50/p99 end-to-end
// latency (result time - the buffer's capture time on the pipeline clock),
// CPU ms per frame, peak RSS in KiB.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <sys/resource.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

bool parse_size(const char* s, int& w, int& h) {
  return std::sscanf(s, "%dx%d", &w, &h) == 2;
}

int run(int argc, char** argv) {
  int sw, sh, iw, ih;
  if (argc < 6 || !parse_size(argv[2], sw, sh) || !parse_size(argv[3], iw, ih)) {
    std::fprintf(
        stderr,
        "usage: naive-app MODEL.pt SRC_WxH IN_WxH FRAMES LIVE [m0 m1 m2 s0 s1 s2 [PATTERN]]\n");
    return 64;
  }
  const int frames = std::atoi(argv[4]);
  const bool live = std::atoi(argv[5]) != 0;
  float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  if (argc >= 12)
    for (int c = 0; c < 3; ++c) mean[c] = std::atof(argv[6 + c]), stdv[c] = std::atof(argv[9 + c]);
  const char* pattern = argc > 12 ? argv[12] : "ball";

  const auto& q = at::globalContext().supportedQEngines();  // int8 files need onednn
  if (std::find(q.begin(), q.end(), at::QEngine::ONEDNN) != q.end())
    at::globalContext().setQEngine(at::QEngine::ONEDNN);
  torch::jit::Module model = torch::jit::load(argv[1]);
  model.eval();

  gst_init(&argc, &argv);
  char desc[512];
  std::snprintf(desc, sizeof desc,
                "videotestsrc num-buffers=%d is-live=%s pattern=%s ! "
                "video/x-raw,format=YUY2,width=%d,height=%d,framerate=30/1 ! videoconvert ! "
                "videoscale ! video/x-raw,format=RGB,width=%d,height=%d ! appsink name=sink",
                frames, live ? "true" : "false", pattern, sw, sh, iw, ih);
  GError* err = nullptr;
  GstElement* pipe = gst_parse_launch(desc, &err);
  if (!pipe) {
    std::fprintf(stderr, "naive-app: %s\n", err ? err->message : "bad pipeline");
    return 1;
  }
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
  gst_element_set_state(pipe, GST_STATE_PLAYING);

  const at::Tensor m = torch::tensor({mean[0], mean[1], mean[2]}).view({1, 3, 1, 1});
  const at::Tensor s = torch::tensor({stdv[0], stdv[1], stdv[2]}).view({1, 3, 1, 1});
  std::vector<double> lat;
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  while (GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink))) {
    GstBuffer* buf = gst_sample_get_buffer(sample);
    const GstClockTime pts = GST_BUFFER_PTS(buf);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_READ);
    // videoscale's RGB rows are 4-byte aligned: 224 * 3 is, 320 * 3 is.
    at::Tensor x = torch::from_blob(map.data, {1, ih, iw, 3}, at::kByte)
                       .permute({0, 3, 1, 2})
                       .to(at::kFloat)
                       .div(255.0)
                       .sub(m)
                       .div(s);
    at::IValue out = model.forward({x});
    at::Tensor y = out.isTuple() ? out.toTuple()->elements()[0].toTensor() : out.toTensor();
    y.argmax().item<int64_t>();
    gst_buffer_unmap(buf, &map);
    GstClock* clock = gst_element_get_clock(pipe);
    if (clock) {
      const GstClockTime now = gst_clock_get_time(clock) - gst_element_get_base_time(pipe);
      lat.push_back((static_cast<double>(now) - static_cast<double>(pts)) / 1e6);
      gst_object_unref(clock);
    }
    gst_sample_unref(sample);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipe);

  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty() ? 0.0
                       : lat[std::min(lat.size() - 1, std::size_t(p * (lat.size() - 1) + 0.5))];
  };
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const std::size_t n = lat.size();
  std::printf("frames=%zu fps=%.3f p50=%.3f p99=%.3f cpu_ms=%.3f rss_kb=%ld\n", n, n / wall,
              pct(0.5), pct(0.99), 1000.0 * cpu / std::max<std::size_t>(n, 1), u.ru_maxrss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "naive-app: %s\n", e.what());
    return 1;
  }
}
