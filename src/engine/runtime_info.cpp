// Names of the engine's enums, the default thread count and what the
// libtorch/oneDNN build offers (for the self-check).
#include <ATen/Parallel.h>
#include <omp.h>
#include <torch/script.h>
#include <torch/version.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "engine/engine_impl.h"

namespace torchinfer {

std::string qengine_name(at::QEngine q) {
  std::string s = c10::toString(q);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* to_string(LoadProgress::Stage s) {
  switch (s) {
    case LoadProgress::Stage::kRead:
      return "read";
    case LoadProgress::Stage::kOptimize:
      return "optimize";
    case LoadProgress::Stage::kWarmup:
      return "warmup";
    case LoadProgress::Stage::kPrecision:
      return "precision";
    case LoadProgress::Stage::kTiming:
      return "timing";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kAuto:
      return "auto";
    case Precision::kFp32:
      return "fp32";
    case Precision::kInt8:
      return "int8";
    case Precision::kBf16:
      return "bf16";
  }
  return "?";
}

int default_threads(const std::vector<int>& cores) {
  if (!cores.empty()) return static_cast<int>(cores.size());
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.empty()) return 1;
  return std::max(1, physical_cores(allowed));
}

namespace {

std::string dnnl_isa_name() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other (" + std::to_string(static_cast<int>(dnnl_get_effective_cpu_isa())) + ")";
  }
}

}  // namespace

RuntimeInfo runtime_info() {
  RuntimeInfo r;
  r.torch_version = TORCH_VERSION;
  const dnnl_version_t* v = dnnl_version();
  r.dnnl_version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
      (v->hash && std::strcmp(v->hash, "N/A") != 0 ? std::string(" (") + v->hash + ")" : "");
  r.dnnl_isa = dnnl_isa_name();
  r.has_mkldnn = at::hasMKLDNN();
  r.mkldnn_enabled = at::globalContext().userEnabledMkldnn();
  for (at::QEngine q : at::globalContext().supportedQEngines())
    r.qengines.push_back(qengine_name(q));
  r.qengine = qengine_name(at::globalContext().qEngine());
  r.omp_max_threads = omp_get_max_threads();
  return r;
}

}  // namespace torchinfer
