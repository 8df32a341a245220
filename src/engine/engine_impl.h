// Engine's private state and the steps of its life, one file per concern:
// model_load.cpp (read, check, optimise, warm up), precision.cpp (fp32 or
// bf16), engine.cpp (the engine's thread, forward(), the public calls).
// Included by those files only.
#pragma once

#include <torch/script.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/engine_thread.h"
#include "engine/input_quant.h"
#include "engine/precision_choice.h"

namespace torchinfer {

using EngineClock = std::chrono::steady_clock;
double ms_since(EngineClock::time_point t0);
std::string qengine_name(at::QEngine q);  // "onednn"

// fp32 and bf16 batch times, interleaved, and how far bf16's outputs are off.
struct Bf16Timings {
  std::vector<double> fp32, bf16;
  double max_diff = 0, max_ref = 0;
};

struct Engine::Impl {
  EngineOptions opts;
  EngineInfo info;
  torch::jit::Module module;
  bool bf16 = false;  // module expects bfloat16 input
  // Set when the engine quantizes the input itself (see input_quant.h).
  std::optional<InputQuantization> input_quant;
  EngineClock::time_point load_start;
  LoadProgress::Stage stage = LoadProgress::Stage::kRead;  // where the load is
  // Last: made after the fields its closures use, gone before them.
  std::unique_ptr<EngineThread> thread;

  // engine.cpp. On the engine's thread only.
  std::shared_ptr<const BatchOutput> forward(const void* input, int batch);
  void setup_threads();
  at::Tensor input_view(const void* input, int batch, at::ScalarType dtype) const;

  // model_load.cpp
  void load();
  void read_model();
  void check_precision_request() const;
  void warm_up(bool report);
  void warm_up_at(int b, const std::function<void()>& after_run);
  torch::jit::Module optimise(const torch::jit::Module& m);
  void progress(LoadProgress::Stage stage, int done);
  int warmup_total() const;
  // Bytes of one frame at the input, for out-of-memory messages.
  int bytes_per_value() const { return opts.input_uint8 ? 1 : 4; }
  // An allocation failed at `stage`, outside the steps that name their own
  // settings: which step, and what to change.
  Error out_of_memory_at_load(const std::exception& e) const;

  // precision.cpp
  void choose_bf16(const torch::jit::Module& eval, bool requested);
  int precision_batch() const;
  bool use_cached_decision(const torch::jit::Module& eval, const PrecisionKey& key,
                           std::string* cache_note);
  void time_and_decide(const torch::jit::Module& eval, int b, bool requested, bool keyed,
                       const PrecisionKey& key, std::string cache_note);
  void time_both(torch::jit::Module& fp32_module, torch::jit::Module& bf16_module,
                 const std::vector<float>& zeros, int b, Bf16Timings& t);
  void apply_decision(const Bf16Timings& t, const torch::jit::Module& bf16_module, int b,
                      bool requested, const PrecisionKey* key, std::string cache_note);
  torch::jit::Module make_bf16(const torch::jit::Module& eval);
  void bf16_error(torch::jit::Module& fp32_module, torch::jit::Module& bf16_module,
                  const float* input, int b, double* max_diff, double* max_ref);
  bool precision_key(int b, PrecisionKey* key, std::string* note);
};

}  // namespace torchinfer
