// Loads a TorchScript model once, optimises it for CPU inference and runs it
// on float NHWC batch buffers. The only part of the core that sees libtorch;
// callers get plain TensorViews.
//
// Threads. Each Engine owns one thread (EngineThread), and that thread
// alone loads the model, runs every forward() and frees the model:
// - libgomp keeps an OpenMP team per calling thread and the thread count
//   is a per-thread setting, so the engine sizes and pins its thread's team
//   once, at load, and every later forward() reuses it pinned (no other
//   thread ever grows a team of the engine's size on the engine's cores).
// - run() and parallel_for() called from another thread are handed to the
//   engine's thread and waited for; called on it, they run at once.
// - A caller that runs batches in a loop (the batcher) posts that loop onto
//   the engine's thread with post(): the loop then calls run() with no
//   hand-off. While such a loop runs, run() and parallel_for() may only be
//   called from it (a call from elsewhere would wait for the loop to end).
// - first_touch() never uses the engine's thread (it may be busy in such a
//   loop): short-lived helper threads pinned to `cores` zero the buffer.
// - The destructor frees the model on the engine's thread and joins it;
//   run from that thread itself (the last owner let go in a posted loop),
//   it frees the model there and the thread ends when the loop returns.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor.h"

namespace torchinfer {

enum class Precision { kAuto, kFp32, kInt8, kBf16 };
const char* to_string(Precision p);

// Where a load stands, for progress reports: a big model can spend seconds
// in optimisation and warm-up. kPrecision (precision=auto on AVX512-BF16
// CPUs, first start of a setup only, or precision=bf16) times fp32 against
// bf16 at the full batch after the warm-up; kTiming is load_model() timing
// one batch for LoadedModel::batch_ms, after the engine's stages.
struct LoadProgress {
  enum class Stage { kRead, kOptimize, kWarmup, kPrecision, kTiming };
  Stage stage = Stage::kRead;
  // Warm-up forward runs finished / to run (warm-up sizes x warmup_runs);
  // 0 before the warm-up, `total` from then on.
  int done = 0, total = 0;
  double elapsed_ms = 0;  // since the load began
};
const char* to_string(LoadProgress::Stage s);

struct EngineOptions {
  std::string model_path;
  int input_width = 224;
  int input_height = 224;
  int channels = 3;
  std::vector<int> warmup_batch_sizes{1};
  int warmup_runs = 3;  // profiling executor specialises on the 2nd run
  // The batch precision=auto/bf16 times fp32 against bf16 at (and caches the
  // decision for): the batcher's full batch. 0 = the largest warm-up size.
  int precision_batch = 0;
  bool optimize = true;
  // Intra-op threads; 0 = number of `cores` if set, else the physical cores
  // this process may run on. OMP_NUM_THREADS does not change it.
  int threads = 0;
  // CPU list ("2-5,8"); each OpenMP worker is pinned to one of these. Unset
  // = not pinned (threads inherit the caller's affinity); "" is an error.
  std::optional<std::string> cores;
  Precision precision = Precision::kAuto;
  // precision=auto times bf16 only on CPUs with AVX512-BF16; true times it
  // anywhere (diagnosis, and tests of the cached decision on any machine).
  bool probe_bf16 = false;
  // `precision` was decided already, by the first lane of the same model
  // (lanes > 1): bf16 converts without timing fp32 against it again, so
  // that every lane runs the same precision.
  bool precision_decided = false;
  // The sidecar says the file is int8; loading a float model then fails.
  bool declared_int8 = false;
  // The model takes raw 0..255 bytes (sidecar "input_dtype": "uint8") and
  // converts them itself; the batch buffer then holds uint8, not float.
  bool input_uint8 = false;
  // The model takes [N,H,W,C] (sidecar "input_layout": "nhwc"); the batch
  // buffer is NHWC either way, so both layouts are zero-copy views.
  bool input_nhwc = false;
  // Called on the engine's thread when read, optimisation and each warm-up
  // batch size start/finish; must not throw or block. Dropped after the load.
  std::function<void(const LoadProgress&)> on_progress;
};

struct EngineInfo {
  double load_ms = 0, optimize_ms = 0, warmup_ms = 0;
  bool frozen = false;
  bool optimized = false;
  std::string optimize_note;  // why optimisation was skipped, if it was
  std::string input_name;
  Precision precision = Precision::kFp32;  // what runs (never kAuto)
  bool model_quantized = false;
  // forward()'s leading quantize_per_tensor is done by the engine's own loop
  // (see input_quant.h).
  bool input_quantized_by_engine = false;
  std::string precision_note;       // figures behind an automatic choice, or a fallback
  double fp32_ms = 0, bf16_ms = 0;  // medians measured at warm-up (0 = not measured)
  // precision=auto's decision came from the cache file (no timing this start).
  bool precision_from_cache = false;
  std::string precision_cache_file;  // read or written; "" = none
  std::string qengine;               // quantized engine selected ("onednn")
  int threads = 0;
  std::vector<int> cores;       // pinned cores, empty = not pinned
  std::vector<int> thread_ids;  // kernel tids of the engine's thread and its OpenMP team
};

// Outputs of one forward call; frame(k) views frame k's slice without copying.
class BatchOutput {
 public:
  struct Impl;
  explicit BatchOutput(std::unique_ptr<Impl> impl);
  ~BatchOutput();

  const std::vector<TensorView>& tensors() const;
  std::vector<TensorView> frame(int k) const;
  // False when any float output of frame k holds a NaN or an infinity
  // (integer outputs are always finite); such a result means nothing.
  bool frame_finite(int k) const;
  double inference_ms() const;
  int batch() const;
  // Frame k's outputs copied into a batch of one: a result kept for later
  // frames (a tile, a tracked object) then keeps only its own frame's
  // tensors, not the whole batch's. Throws Error(kInvalidArgument) for k
  // out of range.
  std::shared_ptr<const BatchOutput> frame_copy(int k) const;

 private:
  std::unique_ptr<Impl> impl_;
};

class Engine {
 public:
  // Throws Error: kNotFound (no file), kConfigInvalid (bad cores/threads,
  // precision the model cannot run at), kModelInvalid (corrupt file, bad
  // interface, forward fails on a dummy input of the configured shape).
  explicit Engine(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // input: batch x H x W x C floats, 64-byte aligned, kept alive by the
  // caller until run() returns. Throws Error(kRuntime).
  std::shared_ptr<const BatchOutput> run(const void* input, int batch);

  // Zero-fills a buffer from threads pinned to `cores`, so that on a NUMA
  // machine its pages are placed on the node of the engine's cores (first
  // touch). Any thread may call it.
  void first_touch(void* data, std::size_t bytes);

  // Calls fn(i, worker) for i in 0..n-1 on the engine's team (the threads
  // run() uses), worker = the OpenMP thread number. fn must not throw. Lets
  // a batch's preprocessing use the inference team instead of competing
  // with it for the cores.
  void parallel_for(int n, const std::function<void(int i, int worker)>& fn);

  // Runs fn on the engine's thread after what is queued there (see
  // "Threads" above); the future holds what fn threw.
  std::future<void> post(std::function<void()> fn);

  const EngineInfo& info() const;
  const EngineOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Versions and backend state for the self-check (no model needed).
struct RuntimeInfo {
  std::string torch_version;
  std::string dnnl_version;
  std::string dnnl_isa;  // dnnl::get_effective_cpu_isa()
  bool has_mkldnn = false;
  bool mkldnn_enabled = false;
  std::vector<std::string> qengines;
  std::string qengine;
  int omp_max_threads = 0;
};
RuntimeInfo runtime_info();

// Whether loading with these options may time fp32 against bf16 and run
// bf16 (precision=bf16, or auto on an AVX512-BF16 CPU or with probe_bf16):
// only then can two loads of the same model end with different precisions.
bool may_choose_bf16(const EngineOptions& options);

// Default intra-op thread count for a CPU list (empty = allowed cores).
int default_threads(const std::vector<int>& cores);

}  // namespace torchinfer
