// Why the engine quantizes int8 models' input itself (engine/input_quant.h):
// ATen's quantize_per_tensor in this libtorch (no fbgemm) is a scalar loop.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "engine/input_quant.h"

namespace {

at::Tensor frames(benchmark::State& state) {
  const int64_t side = state.range(0);
  return torch::randn({state.range(1), 3, side, side}).contiguous(c10::MemoryFormat::ChannelsLast);
}

void BM_AtenQuantizePerTensor(benchmark::State& state) {
  at::set_num_threads(1);
  const at::Tensor x = frames(state);
  for (auto _ : state)
    benchmark::DoNotOptimize(at::quantize_per_tensor(x, 0.0395, 128, at::kQUInt8));
  state.SetItemsProcessed(state.iterations() * x.numel());
}

void BM_EngineQuantizeInput(benchmark::State& state) {
  at::set_num_threads(1);
  const at::Tensor x = frames(state);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        torchinfer::quantize_input(x, torchinfer::InputQuantization{0.0395, 128}));
  state.SetItemsProcessed(state.iterations() * x.numel());
}

}  // namespace

// One thread each: the comparison is the per-element loop, not the parallel split.
BENCHMARK(BM_AtenQuantizePerTensor)
    ->Args({224, 1})
    ->Args({224, 8})
    ->Args({320, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EngineQuantizeInput)
    ->Args({224, 1})
    ->Args({224, 8})
    ->Args({320, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
