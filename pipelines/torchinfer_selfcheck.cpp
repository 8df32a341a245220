// torchinfer-selfcheck: prints what decides inference speed on this machine
// (CPU, ISA, libtorch/oneDNN, threads vs cores, affinity, NUMA, governor)
// and, with --model, the model's state after torchinfer's load path. Each
// warning carries a fix. Exit status 0, 1 when the model fails to load, 2 for
// a bad command line.
//
//   torchinfer-selfcheck [--model M.pt] [--cores LIST] [--threads N]
//                        [--precision auto|fp32|int8|bf16] [--batch N] [--probe-bf16]
//
// --batch: the warm-up batch size precision=auto decides at (and caches for).
// --probe-bf16: let precision=auto time bf16 on a CPU without AVX512-BF16.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "app/app_numbers.h"
#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "common/model_config.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "engine/selfcheck.h"

using namespace torchinfer;
namespace app = torchinfer::app;

namespace {

int usage(int code) {
  std::fprintf(stderr,
               "usage: torchinfer-selfcheck [--model M.pt] [--cores LIST] [--threads N] "
               "[--precision auto|fp32|int8|bf16] [--batch N] [--probe-bf16]\n");
  return code;
}

// The command line's settings.
struct Args {
  std::string model;
  std::optional<std::string> cores;
  int threads = 0;
  Precision precision = Precision::kAuto;
  bool probe_bf16 = false;
  int batch = 1;
};

bool parse_precision(const std::string& p, Precision* out) {
  if (p == "auto")
    *out = Precision::kAuto;
  else if (p == "fp32")
    *out = Precision::kFp32;
  else if (p == "int8")
    *out = Precision::kInt8;
  else if (p == "bf16")
    *out = Precision::kBf16;
  else {
    std::fprintf(stderr, "unknown precision '%s'\n", p.c_str());
    return false;
  }
  return true;
}

// Fills `args`; returns the exit status when the program ends here
// (--help, a bad command line), nothing when it goes on.
std::optional<int> parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") {
      args.model = next();
      if (args.model.empty()) return usage(app::kBadCommandLine);
    } else if (a == "--cores") {
      args.cores = next();
    } else if (a == "--threads") {
      long n = 0;
      // Same bounds as the element's threads property; 0 = automatic.
      if (!app::parse_int("--threads", next(), 0, 1024, &n)) return app::kBadCommandLine;
      args.threads = static_cast<int>(n);
    } else if (a == "--precision") {
      if (!parse_precision(next(), &args.precision)) return app::kBadCommandLine;
    } else if (a == "--probe-bf16") {
      args.probe_bf16 = true;
    } else if (a == "--batch") {
      long n = 0;
      if (!app::parse_int("--batch", next(), 1, 1024, &n)) return app::kBadCommandLine;
      args.batch = static_cast<int>(n);
    } else {
      return usage(a == "--help" || a == "-h" ? 0 : app::kBadCommandLine);
    }
  }
  return std::nullopt;
}

// The model through torchinfer's load path, warmed up and run once on
// `input` (allocated here) so that the report sees it as the element would.
std::unique_ptr<Engine> load_engine(const Args& args, std::unique_ptr<AlignedBuffer>& input) {
  const ModelConfig cfg = resolve_model_config(args.model, "", {});
  EngineOptions o = engine_options_for(args.model, cfg);
  o.threads = args.threads;
  o.cores = args.cores;
  o.precision = args.precision;
  o.probe_bf16 = args.probe_bf16;
  o.warmup_batch_sizes = {args.batch};
  auto engine = std::make_unique<Engine>(o);
  input = std::make_unique<AlignedBuffer>(
      static_cast<std::size_t>(o.input_width) * o.input_height * o.channels * sizeof(float),
      AlignedBuffer::Init::kNone);
  engine->first_touch(input->data(), input->bytes());
  engine->run(input->data(), 1);
  return engine;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const std::optional<int> rc = parse_args(argc, argv, args)) return *rc;
  try {
    std::vector<int> core_list;
    if (args.cores) core_list = resolve_cpu_list(*args.cores, allowed_cpus());
    std::unique_ptr<Engine> engine;
    std::unique_ptr<AlignedBuffer> input;
    if (!args.model.empty()) engine = load_engine(args, input);
    const auto findings =
        self_check(engine.get(), input ? input->data<float>() : nullptr, args.threads, core_list);
    int warnings = 0;
    for (const auto& f : findings) warnings += f.level == Finding::Level::kWarning;
    std::printf("torchinfer self-check\n%s%d warning(s)\n", format_findings(findings).c_str(),
                warnings);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "error: the report could not be written: %s\n", std::strerror(errno));
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
