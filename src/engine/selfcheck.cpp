#include "engine/selfcheck.h"

#include <cstdint>
#include <cstdlib>

#include "common/aligned_buffer.h"
#include "common/cpu_set.h"
#include "engine/engine.h"

namespace torchinfer {
namespace {

using L = Finding::Level;

void runtime_findings(std::vector<Finding>& out) {
  const RuntimeInfo rt = runtime_info();
  out.push_back({L::kInfo, "libtorch", rt.torch_version, ""});
  out.push_back({L::kInfo, "onednn", rt.dnnl_version + ", effective ISA " + rt.dnnl_isa, ""});
  out.push_back({L::kInfo, "onednn kernels",
                 std::string(rt.has_mkldnn ? "built in" : "NOT built in") + ", " +
                     (rt.mkldnn_enabled ? "enabled" : "DISABLED"),
                 ""});
  if (!rt.has_mkldnn || !rt.mkldnn_enabled)
    out.push_back({L::kWarning, "onednn kernels",
                   "convolutions fall back to im2col + reference BLAS (~40x slower)",
                   "use a libtorch built with MKL-DNN and do not call "
                   "torch.backends.mkldnn.enabled=False"});
  std::string qe;
  for (const auto& q : rt.qengines) qe += (qe.empty() ? "" : ",") + q;
  out.push_back({L::kInfo, "quantized engines", qe + " (selected: " + rt.qengine + ")", ""});
}

void affinity_findings(bool pinned, const std::vector<int>& cpus, int threads,
                       std::vector<Finding>& out) {
  out.push_back({L::kInfo, "affinity",
                 pinned ? "pinned, one core per thread: " + format_cpu_list(cpus)
                        : "not pinned (threads float over " + format_cpu_list(cpus) + ")",
                 ""});
  if (const char* omp = std::getenv("OMP_NUM_THREADS"))
    if (std::atoi(omp) != threads)
      out.push_back(
          {L::kInfo, "OMP_NUM_THREADS",
           std::string(omp) + " (ignored: torchinfer uses threads=" + std::to_string(threads) + ")",
           ""});
  if (std::getenv("GOMP_CPU_AFFINITY") && pinned)
    out.push_back(
        {L::kInfo, "GOMP_CPU_AFFINITY", "set; overridden for engine threads by cores", ""});
}

void model_state_findings(const EngineInfo& i, const EngineOptions& o, std::vector<Finding>& out) {
  out.push_back({L::kInfo, "model", o.model_path, ""});
  out.push_back(
      {L::kInfo, "model state",
       std::string("eval, inference mode, ") + (i.frozen ? "frozen" : "not frozen") + ", " +
           (i.optimized ? "optimised"
            : i.model_quantized
                ? "int8 kernels (optimize_for_inference skipped: slower for "
                  "quantized graphs)" +
                      std::string(i.input_quantized_by_engine ? ", input quantized by the engine"
                                                              : "")
                : "not optimised"),
       ""});
  if (!i.optimized && !i.model_quantized)
    out.push_back({L::kWarning, "model state",
                   "not optimised" + (i.optimize_note.empty() ? std::string(" (optimize=false)")
                                                              : ": " + i.optimize_note),
                   "set optimize=true; if it fails, re-export the model as plain traced "
                   "TorchScript (models/export.py)"});
}

void precision_findings(const EngineInfo& i, const EngineOptions& o, std::vector<Finding>& out) {
  out.push_back({L::kInfo, "precision",
                 std::string(to_string(i.precision)) + " (requested " + to_string(o.precision) +
                     ")" + (i.precision_note.empty() ? "" : "; " + i.precision_note),
                 ""});
  if (o.precision == Precision::kAuto && !i.model_quantized) {
    // Where precision=auto's choice came from: the same setup must give the
    // same choice, so a decision is timed once and then read back.
    const std::string source =
        i.precision_from_cache ? "cached decision " + i.precision_cache_file + " (not timed)"
        : !i.precision_cache_file.empty() ? "timed this start, saved to " + i.precision_cache_file
        : i.bf16_ms > 0                   ? "timed this start, not cached"
                                          : "fixed rule, nothing timed";
    out.push_back({L::kInfo, "precision source", source, ""});
    if (i.precision_note.find("precision cache not written") != std::string::npos)
      out.push_back({L::kWarning, "precision cache",
                     "not writable: fp32/bf16 is timed on every start",
                     "set TORCHINFER_CACHE_DIR (or XDG_CACHE_HOME) to a writable folder"});
    if (i.precision_note.find("precision cache ignored") != std::string::npos)
      out.push_back({L::kWarning, "precision cache",
                     "a corrupt cache file was ignored and rewritten",
                     "none if it does not repeat; else check the disk holding the cache folder"});
  }
  if (i.precision == Precision::kInt8 && i.qengine != "onednn")
    out.push_back({L::kWarning, "precision", "int8 on quantized engine " + i.qengine,
                   "use a libtorch with the onednn quantized engine"});
}

void engine_findings(const Engine& engine, std::vector<Finding>& out) {
  const EngineInfo& i = engine.info();
  const EngineOptions& o = engine.options();
  model_state_findings(i, o, out);
  precision_findings(i, o, out);
  out.push_back({L::kInfo, "timings",
                 "load " + std::to_string(static_cast<int>(i.load_ms)) + " ms, optimise " +
                     std::to_string(static_cast<int>(i.optimize_ms)) + " ms, warm-up " +
                     std::to_string(static_cast<int>(i.warmup_ms)) + " ms",
                 ""});
  out.push_back({L::kInfo, "input",
                 std::string(o.input_uint8 ? "uint8" : "float32") + " NHWC " +
                     std::to_string(o.input_height) + "x" + std::to_string(o.input_width) + "x" +
                     std::to_string(o.channels) +
                     (o.input_nhwc ? ", handed to the model as [N,H,W,C]"
                                   : ", seen zero-copy as channels_last NCHW"),
                 ""});
}

}  // namespace

std::vector<Finding> self_check(const Engine* engine, const float* input, int threads,
                                const std::vector<int>& cores) {
  const CpuIdentity cpu = read_cpuinfo();
  std::vector<int> cpus = cores;
  if (engine) {
    threads = engine->info().threads;
    cpus = engine->info().cores;
  }
  const bool pinned = !cpus.empty();
  if (!pinned) cpus = allowed_cpus();
  if (threads <= 0) threads = default_threads(pinned ? cpus : std::vector<int>{});
  std::vector<Finding> out =
      check_system(cpu, cpus, threads, numa_nodes(), cpu_governors(cpus), physical_cores(cpus));
  runtime_findings(out);
  affinity_findings(pinned, cpus, threads, out);
  if (engine) engine_findings(*engine, out);
  if (input) {
    const bool aligned = reinterpret_cast<std::uintptr_t>(input) % kBufferAlignment == 0;
    out.push_back({aligned ? L::kInfo : L::kWarning, "input alignment",
                   aligned ? "64-byte aligned" : "not 64-byte aligned",
                   "allocate batch buffers with AlignedBuffer"});
  }
  return out;
}

}  // namespace torchinfer
