// What the TorchScript archive check (engine/zip_check.h) adds to a model's
// load, per bundled model: every entry read to its end and checked. Figures
// and the old-vs-new comparison in docs/tuning.md.
//   build/tests/bench/zip-check-bench --benchmark_repetitions=9
//     --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>

#include "engine/zip_check.h"

namespace {

void BM_VerifyZipArchive(benchmark::State& state, const std::string& model) {
  const std::string path = std::string(TORCHINFER_MODELS_DIR) + "/" + model;
  for (auto _ : state) benchmark::DoNotOptimize(torchinfer::verify_zip_archive(path));
}

}  // namespace

BENCHMARK_CAPTURE(BM_VerifyZipArchive, parts_classifier, std::string("parts_classifier.pt"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_VerifyZipArchive, parts_detector, std::string("parts_detector.pt"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_VerifyZipArchive, parts_detector_int8, std::string("parts_detector_int8.pt"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_VerifyZipArchive, defect_classifier, std::string("defect_classifier.pt"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_VerifyZipArchive, part_anomaly, std::string("part_anomaly.pt"))
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
