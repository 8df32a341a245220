// Loads a TorchScript model once, optimises it for CPU inference and runs it
// on float NHWC batch buffers. The only part of the core that sees libtorch;
// callers get plain TensorViews.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace torchinfer {

struct EngineOptions {
  std::string model_path;
  int input_width = 224;
  int input_height = 224;
  int channels = 3;
  std::vector<int> warmup_batch_sizes{1};
  int warmup_runs = 3;  // profiling executor specialises on the 2nd run
  bool optimize = true;
};

struct EngineInfo {
  double load_ms = 0, optimize_ms = 0, warmup_ms = 0;
  bool frozen = false;
  bool optimized = false;
  std::string optimize_note;  // why optimisation was skipped, if it was
  std::string input_name;
};

// Outputs of one forward call; frame(k) views frame k's slice without copying.
class BatchOutput {
 public:
  struct Impl;
  explicit BatchOutput(std::unique_ptr<Impl> impl);
  ~BatchOutput();

  int batch_size() const;
  const std::vector<TensorView>& tensors() const;
  std::vector<TensorView> frame(int k) const;
  double inference_ms() const;

 private:
  std::unique_ptr<Impl> impl_;
};

class Engine {
 public:
  // Throws Error: kNotFound (no file), kModelInvalid (corrupt file, bad
  // interface, forward fails on a dummy input of the configured shape).
  explicit Engine(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // input: batch x H x W x C floats, 64-byte aligned, kept alive by the
  // caller until run() returns. Throws Error(kRuntime).
  std::shared_ptr<const BatchOutput> run(const float* input, int batch);

  const EngineInfo& info() const;
  const EngineOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchinfer
