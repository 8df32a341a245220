// fp32 or bf16 (engine.h, EngineOptions::precision). A bf16 copy is made
// from the unfrozen eval-mode module, tried on one frame before it is
// frozen, then timed against fp32 at the full batch; precision=auto
// applies decide_precision() (precision_choice.h) and caches the decision
// per model, CPU, threads, batch and libtorch, so that the same setup gets
// the same precision on every start.
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/memory_error.h"
#include "common/sysinfo.h"
#include "engine/batch_output.h"
#include "engine/engine_impl.h"
#include "engine/libtorch_messages.h"
#include "engine/precision_choice.h"

namespace torchinfer {
namespace {

// bf16 kernels of oneDNN need AVX512-BF16; elsewhere bf16 is emulated and
// slower than fp32, so precision=auto does not time it.
bool native_bf16() {
  return isa_from_flags(read_cpuinfo().flags).avx512_bf16;
}

// Outputs of `m` on `x` as float, for the bf16-vs-fp32 accuracy check.
std::vector<at::Tensor> float_outputs(torch::jit::Module& m, const at::Tensor& x) {
  c10::InferenceMode guard;
  std::vector<std::pair<std::string, at::Tensor>> outs;
  collect_outputs(m.forward({x}), outs);
  std::vector<at::Tensor> r;
  for (auto& [name, t] : outs)
    if (t.is_floating_point()) r.push_back(t.to(at::kFloat));
  return r;
}

// Why a bf16 copy cannot run, for the operator: libtorch's complaint about
// a float32 input against bf16 weights means forward() casts its input.
std::string bf16_refusal(const std::string& why) {
  const bool casts =
      why.find("Float") != std::string::npos && why.find("BFloat16") != std::string::npos;
  return "the model does not run in bfloat16 (" + why + ")" +
         (casts ? "; its forward() converts its input back to float32, so its bf16 weights meet "
                  "a float32 input"
                : "");
}

}  // namespace

bool may_choose_bf16(const EngineOptions& o) {
  return !o.input_uint8 &&
         (o.precision == Precision::kBf16 ||
          (o.precision == Precision::kAuto && at::globalContext().userEnabledMkldnn() &&
           (o.probe_bf16 || native_bf16())));
}

int Engine::Impl::precision_batch() const {
  if (opts.precision_batch > 0) return opts.precision_batch;
  return std::max(
      1, *std::max_element(opts.warmup_batch_sizes.begin(), opts.warmup_batch_sizes.end()));
}

// Freezing a copy that cannot run can give one that crashes the process:
// a model that casts its input back to float32 raises in its unfrozen bf16
// copy ("Input type and weight type should be the same") but segfaulted in
// libtorch once frozen (issue 24). So the unfrozen copy runs one frame
// first; what it throws is why bf16 is refused, as Error(kConfigInvalid).
torch::jit::Module Engine::Impl::make_bf16(const torch::jit::Module& eval) {
  torch::jit::Module m = eval.clone();
  m.to(at::kBFloat16);
  try {
    std::vector<float> frame(
        static_cast<std::size_t>(opts.input_height) * opts.input_width * opts.channels, 0.f);
    c10::InferenceMode guard;
    m.forward({input_view(frame.data(), 1, at::kFloat).to(at::kBFloat16)});
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) throw;
    throw Error(ErrorKind::kConfigInvalid, bf16_refusal(message_of(e)));
  }
  // Frozen only: optimize_for_inference's oneDNN conversion is for fp32
  // and measured 3.6x slower than plain frozen bf16 on MobileNetV2.
  if (opts.optimize) m = torch::jit::freeze(m);
  return m;
}

// Largest |bf16 - fp32| over all float outputs on `input`, and largest |fp32|.
void Engine::Impl::bf16_error(torch::jit::Module& fp32_module, torch::jit::Module& bf16_module,
                              const float* input, int b, double* max_diff, double* max_ref) {
  const at::Tensor x = input_view(input, b, at::kFloat);
  const auto ref = float_outputs(fp32_module, x);
  const auto got = float_outputs(bf16_module, x.to(at::kBFloat16));
  *max_diff = *max_ref = 0;
  if (ref.size() != got.size())
    throw Error(ErrorKind::kRuntime, "bf16 copy returns a different set of outputs");
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].sizes() != got[i].sizes())
      throw Error(ErrorKind::kRuntime, "bf16 copy returns outputs of another shape");
    if (ref[i].numel() == 0) continue;
    *max_ref = std::max(*max_ref, ref[i].abs().max().item<double>());
    *max_diff = std::max(*max_diff, (ref[i] - got[i]).abs().max().item<double>());
  }
}

// The cache key of an automatic choice at batch b; false (with a note) if
// the model file cannot be hashed.
bool Engine::Impl::precision_key(int b, PrecisionKey* key, std::string* note) {
  try {
    hash_model_file(opts.model_path, key);
  } catch (const std::exception& e) {
    *note = std::string("precision cache not used: ") + e.what();
    return false;
  }
  key->cpu_model = read_cpuinfo().model_name;
  key->threads = info.threads;
  key->batch = b;
  key->torch_version = TORCH_VERSION;
  return true;
}

// precision=auto with a cached decision: true if it was applied. A cached
// bf16 whose copy fails now is noted, and the caller decides afresh.
bool Engine::Impl::use_cached_decision(const torch::jit::Module& eval, const PrecisionKey& key,
                                       std::string* cache_note) {
  auto c = read_cached_decision(precision_cache_dir(), key, cache_note);
  if (!c) return false;
  info.precision_from_cache = true;
  info.precision_cache_file = c->path;
  info.fp32_ms = c->decision.fp32_ms;
  info.bf16_ms = c->decision.bf16_ms;
  const std::string src = " (cached " + c->created + ", " + c->path + ")";
  if (!c->decision.bf16) {
    info.precision = Precision::kFp32;
    info.precision_note = "auto: fp32" + src;
    return true;
  }
  try {
    module = make_bf16(eval);
    bf16 = true;
    info.precision = Precision::kBf16;
    info.precision_note = "auto: bf16" + src;
    return true;
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) throw;
    info.precision_from_cache = false;
    *cache_note = "cached bf16 no longer runs (" + message_of(e) + "), deciding again";
    return false;
  }
}

namespace {

// The zeros a batch of b frames is timed on; out of memory names the settings.
std::vector<float> timing_input(const EngineOptions& o, int b) {
  try {
    return std::vector<float>(
        static_cast<std::size_t>(b) * o.input_height * o.input_width * o.channels, 0.f);
  } catch (const std::exception& e) {
    const Error oom =
        input_too_large(o.input_width, o.input_height, o.channels, b, 4, e, "the fp32/bf16 timing");
    throw Error(oom.kind(), "model '" + o.model_path + "': " + oom.what());
  }
}

}  // namespace

// fp32 and bf16 interleaved at batch b, then their difference on the same
// input; `module`/`bf16` are left on fp32.
void Engine::Impl::time_both(torch::jit::Module& fp32_module, torch::jit::Module& bf16_module,
                             const std::vector<float>& zeros, int b, Bf16Timings& t) {
  auto run = [&](torch::jit::Module& m, bool is_bf16) {
    module = m;
    bf16 = is_bf16;
    return forward(zeros.data(), b)->inference_ms();
  };
  // The warm-up may not have run fp32 at b: its first call there builds
  // b's oneDNN primitives, which the timing below must not count.
  run(fp32_module, false);
  run(bf16_module, true);  // profiling runs
  run(bf16_module, true);
  const int runs = std::max(5, opts.warmup_runs);
  for (int i = 0; i < runs; ++i) {  // interleaved, so load from others hits both alike
    t.fp32.push_back(run(fp32_module, false));
    t.bf16.push_back(run(bf16_module, true));
    // One lost round keeps fp32 (the rule wants every round): emulated
    // bf16 is ~70x slower on AVX2, so timing on would only cost start time.
    if (t.bf16.back() >= t.fp32.back()) break;
  }
  module = fp32_module;
  bf16 = false;
  if (t.bf16.back() < t.fp32.back())
    bf16_error(fp32_module, bf16_module, zeros.data(), b, &t.max_diff, &t.max_ref);
}

// Times a bf16 copy of `eval` against the fp32 `module` at batch b. A copy
// that cannot run is refused: precision=bf16 fails, auto keeps fp32 and
// says why (not cached: it is quick to find again).
void Engine::Impl::time_and_decide(const torch::jit::Module& eval, int b, bool requested,
                                   bool keyed, const PrecisionKey& key, std::string cache_note) {
  torch::jit::Module fp32_module = module, bf16_module;
  const std::vector<float> zeros = timing_input(opts, b);
  Bf16Timings t;
  std::string failure;
  try {
    bf16_module = make_bf16(eval);  // before any timing: a copy that cannot run is refused
    time_both(fp32_module, bf16_module, zeros, b, t);
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) throw;
    failure = dynamic_cast<const Error*>(&e) ? e.what() : message_of(e);
  }
  module = fp32_module;
  bf16 = false;
  info.precision = Precision::kFp32;
  if (!failure.empty()) {
    if (requested)
      throw Error(ErrorKind::kConfigInvalid, "precision=bf16: model '" + opts.model_path +
                                                 "': " + failure + "; use precision=fp32 or auto");
    info.precision_note = "auto: fp32 (bf16 refused: " + failure + ")" +
                          (cache_note.empty() ? "" : "; " + cache_note);
    return;
  }
  apply_decision(t, bf16_module, b, requested, keyed ? &key : nullptr, std::move(cache_note));
}

// The timed figures through decide_precision(): what runs, the note saying
// why, and (precision=auto, `key` set) the decision cached.
void Engine::Impl::apply_decision(const Bf16Timings& t, const torch::jit::Module& bf16_module,
                                  int b, bool requested, const PrecisionKey* key,
                                  std::string cache_note) {
  PrecisionRule rule;
  if (requested) {  // an explicit bf16 only needs to be faster; its accuracy is the user's call
    rule.min_fp32_ms = 0;
    rule.max_rel_error = std::numeric_limits<double>::infinity();
  }
  const PrecisionDecision d = decide_precision(t.fp32, t.bf16, t.max_diff, t.max_ref, rule);
  info.fp32_ms = d.fp32_ms;
  info.bf16_ms = d.bf16_ms;
  if (d.bf16) {
    module = bf16_module;
    bf16 = true;
    info.precision = Precision::kBf16;
  }
  const std::string batch = " at batch " + std::to_string(b) + ": ";
  const std::string why = d.reason.substr(6);  // after "fp32: " / "bf16: "
  if (requested) {
    info.precision_note =
        d.bf16 ? "bf16 timed" + batch + why
               : "precision=bf16 not faster here, running fp32 (timed" + batch + why + ")";
    return;
  }
  info.precision_note = "auto: " + d.reason.substr(0, 4) + " timed" + batch + why;
  if (key) {
    std::string write_note;
    info.precision_cache_file = write_cached_decision(precision_cache_dir(), *key, d, &write_note);
    if (!write_note.empty()) cache_note += (cache_note.empty() ? "" : "; ") + write_note;
  }
  if (!cache_note.empty()) info.precision_note += "; " + cache_note;
}

// `eval` is the unfrozen eval-mode module the bf16 copy is made from.
void Engine::Impl::choose_bf16(const torch::jit::Module& eval, bool requested) {
  if (requested && opts.precision_decided) {
    try {
      module = make_bf16(eval);
    } catch (const Error& e) {
      throw Error(e.kind(), "precision=bf16: model '" + opts.model_path + "': " + e.what() +
                                "; use precision=fp32 or auto");
    }
    bf16 = true;
    info.precision = Precision::kBf16;
    info.precision_note = "bf16, as the model's first lane decided";
    return;
  }
  progress(LoadProgress::Stage::kPrecision, warmup_total());
  const int b = precision_batch();
  PrecisionKey key;
  std::string cache_note;
  const bool keyed = !requested && precision_key(b, &key, &cache_note);
  if (keyed && use_cached_decision(eval, key, &cache_note)) return;
  time_and_decide(eval, b, requested, keyed, key, std::move(cache_note));
}

}  // namespace torchinfer
