// The motion gate's own cost per frame (inference-gate=motion,
// stream/motion_gate.h): MotionGate::decide() on 1920x1080 and 640x480
// frames of each family of formats, next to the fused preprocessing of the
// same frame to the demo detector's 320x240 input, on one thread. Every
// frame due is judged; only those with motion pay the preprocessing (and
// forward()). Figures in docs/tuning.md; run through tests/bench/gate.sh's
// neighbour, e.g.
//   build/tests/bench/motion-gate-bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <map>
#include <tuple>

#include "common/aligned_buffer.h"
#include "frames.h"
#include "preprocess/preprocess.h"
#include "stream/motion_gate.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

const OwnedFrame& frame(PixelFormat f, int w, int h, unsigned seed) {
  static std::map<std::tuple<int, int, int, unsigned>, OwnedFrame> cache;
  const auto key = std::make_tuple(static_cast<int>(f), w, h, seed);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_frame(make_rgb_image(w, h, seed), f)).first;
  return it->second;
}

// Two different frames in turn against a reference: the work of a frame
// with motion and of a still one is the same (sample, compare, count).
void BM_Gate(benchmark::State& state, PixelFormat f, int w, int h) {
  MotionGateOptions o;
  o.enabled = true;
  MotionGate gate(o);
  const FrameView a = frame(f, w, h, 1).view, b = frame(f, w, h, 2).view;
  gate.decide(a);
  gate.commit();
  bool odd = false;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gate.decide(odd ? a : b));
    odd = !odd;
  }
}

void BM_Preprocess(benchmark::State& state, PixelFormat f, int w, int h) {
  PreprocessOptions o;
  o.out_width = 320;
  o.out_height = 240;
  Preprocessor pre(o);
  AlignedBuffer dst(o.slot_bytes());
  const FrameView v = frame(f, w, h, 1).view;
  for (auto _ : state) {
    pre.run(v, dst.data<float>());
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Gate, YUY2_1920x1080, PixelFormat::kYUY2, 1920, 1080);
BENCHMARK_CAPTURE(BM_Preprocess, YUY2_1920x1080, PixelFormat::kYUY2, 1920, 1080);
BENCHMARK_CAPTURE(BM_Gate, NV12_1920x1080, PixelFormat::kNV12, 1920, 1080);
BENCHMARK_CAPTURE(BM_Preprocess, NV12_1920x1080, PixelFormat::kNV12, 1920, 1080);
BENCHMARK_CAPTURE(BM_Gate, I420_1920x1080, PixelFormat::kI420, 1920, 1080);
BENCHMARK_CAPTURE(BM_Gate, GRAY8_1920x1080, PixelFormat::kGRAY8, 1920, 1080);
BENCHMARK_CAPTURE(BM_Gate, RGB_1920x1080, PixelFormat::kRGB, 1920, 1080);
BENCHMARK_CAPTURE(BM_Preprocess, RGB_1920x1080, PixelFormat::kRGB, 1920, 1080);
BENCHMARK_CAPTURE(BM_Gate, YUY2_640x480, PixelFormat::kYUY2, 640, 480);
BENCHMARK_CAPTURE(BM_Preprocess, YUY2_640x480, PixelFormat::kYUY2, 640, 480);

BENCHMARK_MAIN();
