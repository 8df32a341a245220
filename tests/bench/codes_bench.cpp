// codes-bench: the cost of one torchcodes read (src/codes/code_reader.h) on
// the streaming thread, by symbol type and module size, inside a part's
// region of a 1280x720 YUY2 frame (the luma read in place, pixel stride 2),
// plus a region with no symbol (what a failed try costs) and the whole
// frame. Symbols are rendered here by zxing-cpp's writer. Figures and the
// command: docs/elements.md, torchcodes.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "code_symbols.h"
#include "codes/code_reader.h"
#include "codes/code_session.h"

using namespace torchinfer;
using torchinfer::test::GreyCanvas;

namespace {

constexpr int kW = 1280, kH = 720;

struct Frame {
  std::vector<std::uint8_t> yuy2;
  CodeBox region;  // the part: the symbol with 40 px around it
  LumaView view() const { return {yuy2.data(), yuy2.size(), kW, kH, 2, kW * 2}; }
};

// One symbol at the frame's centre, on a mid-grey part.
Frame frame_with(const std::string& format, int module) {
  GreyCanvas c(kW, kH, 128);
  const GreyCanvas sym =
      test::render_symbol(format, format == "Code128" ? "PART-000123" : "SN-2026-000123", module);
  const int x = (kW - sym.width) / 2, y = (kH - sym.height) / 2;
  paste(c, sym, x, y);
  return {test::to_yuy2(c), {x - 40.0, y - 40.0, x + sym.width + 40.0, y + sym.height + 40.0}};
}

void read_region(benchmark::State& state, const std::string& format) {
  const Frame f = frame_with(format, static_cast<int>(state.range(0)));
  CodeOptions o;
  o.padding = 0;
  const CodeReader reader(o);
  std::size_t found = 0;
  for (auto _ : state) {
    const CodeRead r = reader.read(f.view(), f.region);
    found += r.codes.size();
    benchmark::DoNotOptimize(r);
  }
  if (found != state.iterations()) state.SkipWithError("a read missed the symbol");
  state.counters["region_px"] =
      (f.region.x_max - f.region.x_min) * (f.region.y_max - f.region.y_min);
}

void BM_Region_DataMatrix(benchmark::State& s) {
  read_region(s, "DataMatrix");
}
void BM_Region_QRCode(benchmark::State& s) {
  read_region(s, "QRCode");
}
void BM_Region_Code128(benchmark::State& s) {
  read_region(s, "Code128");
}

// A 300x300 part with no symbol: the cost of each failed try.
void BM_Region_NoSymbol(benchmark::State& state) {
  GreyCanvas c(kW, kH, 128);
  noise(c, 490, 210, 300, 300, 1);
  const std::vector<std::uint8_t> yuy2 = test::to_yuy2(c);
  CodeOptions o;
  o.padding = 0;
  o.try_invert = state.range(0) != 0;
  const CodeReader reader(o);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        reader.read({yuy2.data(), yuy2.size(), kW, kH, 2, kW * 2}, CodeBox{490, 210, 790, 510}));
}

// The whole 1280x720 frame with one QR code (full-frame mode).
void BM_FullFrame_QRCode(benchmark::State& state) {
  const Frame f = frame_with("QRCode", 4);
  const CodeReader reader(CodeOptions{});
  for (auto _ : state) benchmark::DoNotOptimize(reader.read(f.view(), std::nullopt));
}

// Time on the streaming thread for one frame with four untracked parts (two
// DataMatrix codes, two parts without a code: 300x300 noise) read on it
// (workers = 0) or on 2 workers with a 5 ms budget; counters: reads per
// frame and deferred/late ones (workers only).
void BM_Frame_FourParts(benchmark::State& state) {
  GreyCanvas c(kW, kH, 128);
  const GreyCanvas dm = test::render_symbol("DataMatrix", "SN-2026-000123", 4);
  paste(c, dm, 100, 300);
  paste(c, dm, 400, 300);
  noise(c, 700, 200, 300, 300, 1);
  noise(c, 980, 200, 290, 300, 2);
  const std::vector<std::uint8_t> yuy2 = test::to_yuy2(c);
  const LumaView v{yuy2.data(), yuy2.size(), kW, kH, 2, kW * 2};
  const auto part = [&](double x, double y, double w, double h) {
    return CodeRegion{{x, y, x + w, y + h}, "part", std::nullopt};
  };
  const std::vector<CodeRegion> parts = {part(60, 260, dm.width + 80.0, dm.height + 80.0),
                                         part(360, 260, dm.width + 80.0, dm.height + 80.0),
                                         part(700, 200, 300, 300), part(980, 200, 290, 300)};
  CodeSessionOptions o;
  o.reader.padding = 0;
  o.workers = static_cast<unsigned>(state.range(0));
  o.budget_ms = 5;
  CodeSession s(o);
  for (auto _ : state) benchmark::DoNotOptimize(s.process(v, parts));
  const double frames = static_cast<double>(state.iterations());
  state.counters["reads_per_frame"] = s.totals().tried / frames;
  state.counters["deferred_per_frame"] = s.totals().deferred / frames;
  state.counters["late_per_frame"] = s.totals().late / frames;
}

}  // namespace

BENCHMARK(BM_Frame_FourParts)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Region_DataMatrix)->Arg(2)->Arg(4)->Arg(6)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Region_QRCode)->Arg(2)->Arg(4)->Arg(6)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Region_Code128)->Arg(2)->Arg(3)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Region_NoSymbol)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FullFrame_QRCode)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
