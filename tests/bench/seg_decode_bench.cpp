// seg-decode-bench: torchnms' decode cost per frame, decoder yolov8-seg
// (boxes + masks) side by side with yolov8 (boxes), on the same 8400
// candidates of 80 classes (YOLOv8 at 640x640; seg: 32 prototypes of
// 160x160) for a 1920x1080 frame letterboxed into the input.
//
//   seg-decode-bench [--rounds 5] [--iters 20] [--box 32]
//
// For 0, 10 and 100 objects (each 3 overlapping candidates of a box x box
// model-pixel box, at most 36, the rest scoring 0.01 < 0.25), rounds alternate the
// decoders; each round times `iters` frames per decoder. Prints the median
// over rounds of each round's median ms per frame: yolov8, yolov8-seg boxes
// only (decode_detections on the seg head), and yolov8-seg with masks, and
// the fastest frame of yolov8 and of yolov8-seg with masks. The machine is
// shared: read the ratios (a long decode is preempted more often than a
// short one under load, which the fastest frames show). --rounds 1 --iters 1 is the smoke run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decode/detection.h"
#include "decode/yolov8_seg.h"

using namespace torchinfer;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kAnchors = 8400, kClasses = 80, kCoefs = 32, kProto = 160, kInput = 640;

struct Outputs {
  std::vector<float> head, seg_head, protos;
  TensorView det, seg, proto;
};

// k objects on a 10x10 grid over the letterboxed image (64 px across, 36
// down from row 140), 3 candidates each.
Outputs make_outputs(int objects, int box, std::mt19937& rng) {
  Outputs o;
  const int ch = 4 + kClasses, sch = ch + kCoefs;
  o.head.assign(static_cast<std::size_t>(ch) * kAnchors, 0.01f);
  o.seg_head.assign(static_cast<std::size_t>(sch) * kAnchors, 0.01f);
  std::normal_distribution<float> noise(0.f, 1.f);
  for (int a = 0; a < kAnchors; ++a) {
    const bool object = a < 3 * objects;
    const int obj = a / 3;
    const float cx = object ? 32.f + 64.f * (obj % 10) + (a % 3) : 4.f + 7.f * (a % 90);
    const float cy = object ? 158.f + 36.f * (obj / 10) - (a % 3) : 4.f + 7.f * (a / 90);
    const float vals[4] = {cx, cy, object ? float(box) : 8.f, object ? float(box) : 8.f};
    for (int c = 0; c < 4; ++c) {
      o.head[static_cast<std::size_t>(c) * kAnchors + a] = vals[c];
      o.seg_head[static_cast<std::size_t>(c) * kAnchors + a] = vals[c];
    }
    if (object) {
      const std::size_t cls = 4 + static_cast<std::size_t>(obj % kClasses);
      o.head[cls * kAnchors + a] = o.seg_head[cls * kAnchors + a] = 0.9f - 0.1f * (a % 3);
    }
    for (int k = 0; k < kCoefs; ++k)
      o.seg_head[static_cast<std::size_t>(ch + k) * kAnchors + a] = noise(rng);
  }
  o.protos.resize(static_cast<std::size_t>(kCoefs) * kProto * kProto);
  for (float& v : o.protos) v = noise(rng);
  auto view = [](const char* name, std::vector<float>& v, std::vector<std::int64_t> dims) {
    TensorView t;
    t.name = name;
    t.dims = std::move(dims);
    t.data = v.data();
    t.bytes = v.size() * sizeof(float);
    return t;
  };
  o.det = view("output0", o.head, {1, ch, kAnchors});
  o.seg = view("output0", o.seg_head, {1, sch, kAnchors});
  o.proto = view("output1", o.protos, {1, kCoefs, kProto, kProto});
  return o;
}

FrameMapping letterbox_1080p() {
  FrameMapping m;
  m.frame_width = 1920;
  m.frame_height = 1080;
  m.input_width = m.input_height = kInput;
  m.scale_x = m.scale_y = 1.0 / 3;
  m.offset_y = 140;
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

enum class Mode { kYolov8, kSegBoxes, kSegMasks };

// Median ms per frame of `iters` decodes (*fastest: the fastest of them
// and earlier ones); `count` gets the detections.
double time_mode(Mode mode, const Outputs& o, int iters, std::size_t* count, double* fastest) {
  const FrameMapping m = letterbox_1080p();
  const DetectionOptions opts;
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    if (mode == Mode::kYolov8) {
      *count = decode_detections(Decoder::kYolov8, {o.det}, opts, m).size();
    } else {
      const std::vector<TensorView> outs{o.seg, o.proto};
      const auto dets = decode_detections(Decoder::kYolov8Seg, outs, opts, m);
      if (mode == Mode::kSegMasks) *count = decode_masks(outs, dets, m, 0.5).size();
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    *fastest = std::min(*fastest, ms.back());
  }
  return median(ms);
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = std::max(1, arg(argc, argv, "--rounds", 5));
  const int iters = std::max(1, arg(argc, argv, "--iters", 20));
  const int box = std::clamp(arg(argc, argv, "--box", 32), 4, 36);
  std::mt19937 rng(1);
  std::printf(
      "objects  yolov8_ms  seg_boxes_ms  seg_masks_ms  seg/yolov8  fastest: yolov8  "
      "seg_masks  (%d rounds x %d frames, box %d model px = %d frame px)\n",
      rounds, iters, box, box * 3);
  for (int objects : {0, 10, 100}) {
    const Outputs o = make_outputs(objects, box, rng);
    std::vector<double> v8, boxes, masks;
    std::size_t n8 = 0, nseg = 0, unused = 0;
    double f8 = 1e9, fboxes = 1e9, fmasks = 1e9;
    for (int r = 0; r < rounds; ++r) {
      v8.push_back(time_mode(Mode::kYolov8, o, iters, &n8, &f8));
      boxes.push_back(time_mode(Mode::kSegBoxes, o, iters, &unused, &fboxes));
      masks.push_back(time_mode(Mode::kSegMasks, o, iters, &nseg, &fmasks));
    }
    if (n8 != static_cast<std::size_t>(objects) || nseg != n8) {
      std::fprintf(stderr, "seg-decode-bench: %zu and %zu detections, expected %d\n", n8, nseg,
                   objects);
      return 1;
    }
    const double a = median(v8), b = median(boxes), c = median(masks);
    std::printf("%7d  %9.3f  %12.3f  %12.3f  %10.2f  %15.3f  %9.3f\n", objects, a, b, c,
                a > 0 ? c / a : 0, f8, fmasks);
  }
  return 0;
}
