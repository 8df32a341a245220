// Decode cost per frame, yolov8-obb next to yolov8, on 8400 candidates
// (640x640, strides 8/16/32) in three shapes: "sparse" (1 % of anchors
// above the threshold, random boxes and angles), "overlap" (all 8400 above
// it, all on one object: NMS suppresses nearly everything) and "disjoint"
// (all above it, a grid of separate boxes: NMS stops at max-detections).
// The decoders run alternately, round after round, and the medians are
// printed with their ratio (docs/elements.md, torchnms). A figure, never a
// test: timings go nowhere but stdout.
//
//   obb-decode-bench [--rounds N] [--iters N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decode/detection.h"
#include "decode/yolov8_obb.h"

using namespace torchinfer;

namespace {

constexpr int kAnchors = 8400, kClasses = 3;

struct Case {
  std::string name;
  std::vector<float> v8, obb;  // [4 + C, A] and [4 + C + 1, A]
};

Case make_case(const std::string& name) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Case c{name, std::vector<float>((4 + kClasses) * kAnchors),
         std::vector<float>((5 + kClasses) * kAnchors)};
  for (int a = 0; a < kAnchors; ++a) {
    float box[4], angle = (u(rng) - 0.25f) * 3.14159265f;
    if (name == "overlap") {
      box[0] = 320 + 4 * u(rng), box[1] = 320 + 4 * u(rng), box[2] = 100, box[3] = 40;
    } else if (name == "disjoint") {
      box[0] = 3.5f + 7 * (a % 91), box[1] = 3.5f + 7 * (a / 91), box[2] = 5, box[3] = 3;
    } else {
      box[0] = 640 * u(rng), box[1] = 640 * u(rng), box[2] = 20 + 60 * u(rng),
      box[3] = 20 + 60 * u(rng);
    }
    const bool hit = name != "sparse" || a % 100 == 0;
    for (int k = 0; k < 4; ++k) c.v8[k * kAnchors + a] = c.obb[k * kAnchors + a] = box[k];
    for (int k = 0; k < kClasses; ++k) {
      const float s = hit ? (k == a % kClasses ? 0.5f + 0.4f * u(rng) : 0.1f) : 0.3f * u(rng);
      c.v8[(4 + k) * kAnchors + a] = c.obb[(4 + k) * kAnchors + a] = s;
    }
    c.obb[(4 + kClasses) * kAnchors + a] = angle;
  }
  return c;
}

TensorView view(std::vector<float>& v, int channels) {
  TensorView t;
  t.name = "output0";
  t.dims = {1, channels, kAnchors};
  t.data = v.data();
  t.bytes = v.size() * sizeof(float);
  return t;
}

double ms_per_frame(Decoder d, const TensorView& t, int iters, std::size_t* found) {
  FrameMapping m;
  m.frame_width = m.frame_height = m.input_width = m.input_height = 640;
  const DetectionOptions o;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) *found = decode_detections(d, {t}, o, m).size();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         iters;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--iters")) iters = std::max(1, std::atoi(argv[i + 1]));
  }
  std::printf("case      yolov8 ms  yolov8-obb ms  obb/v8  detections v8/obb  (%d rounds x %d)\n",
              rounds, iters);
  for (const char* name : {"sparse", "overlap", "disjoint"}) {
    Case c = make_case(name);
    const TensorView v8 = view(c.v8, 4 + kClasses), obb = view(c.obb, 5 + kClasses);
    std::vector<double> a, b;
    std::size_t na = 0, nb = 0;
    for (int r = 0; r < rounds; ++r) {
      a.push_back(ms_per_frame(Decoder::kYolov8, v8, iters, &na));
      b.push_back(ms_per_frame(Decoder::kYolov8Obb, obb, iters, &nb));
    }
    std::printf("%-9s %9.3f  %13.3f  %6.2f  %zu/%zu\n", name, median(a), median(b),
                median(b) / median(a), na, nb);
  }
  return 0;
}
