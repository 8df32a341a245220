// An engine's load, on its own thread: read and check the file, make the
// eval module, optimise it, warm it up, choose the precision.
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "common/error.h"
#include "common/memory_error.h"
#include "engine/engine_impl.h"
#include "engine/libtorch_messages.h"
#include "engine/zip_check.h"

namespace torchinfer {
namespace {

// Quantized models hold packed int8 weights and quantize their input; after
// inlining, their graph names quantized:: ops or aten::quantize_per_*.
bool graph_is_quantized(torch::jit::Module& m) {
  auto g = m.get_method("forward").graph()->copy();
  torch::jit::Inline(*g);
  std::function<bool(torch::jit::Block*)> scan = [&](torch::jit::Block* b) {
    for (torch::jit::Node* n : b->nodes()) {
      const std::string kind = n->kind().toQualString();
      if (kind.rfind("quantized::", 0) == 0 || kind.rfind("aten::quantize_per_", 0) == 0)
        return true;
      for (torch::jit::Block* sub : n->blocks())
        if (scan(sub)) return true;
    }
    return false;
  };
  return scan(g->block());
}

// One image tensor in: every argument after `self` beyond the first must be
// optional. Returns the image argument's name.
std::string check_interface(torch::jit::Module& module, const std::string& path) {
  if (!module.find_method("forward"))
    throw Error(ErrorKind::kModelInvalid, "model '" + path + "' has no forward() method");
  const auto& args = module.get_method("forward").function().getSchema().arguments();
  std::size_t required = 0;
  std::ostringstream names;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) ++required;
    names << (i > 1 ? ", " : "") << args[i].name();
  }
  if (args.size() < 2 || required > 1)
    throw Error(ErrorKind::kModelInvalid,
                "model '" + path + "': forward(" + names.str() + ") takes " +
                    std::to_string(args.size() - 1) +
                    " inputs; torchinfer feeds exactly one image tensor: wrap the model in a "
                    "module whose forward() takes the image alone (models/README.md)");
  return args[1].name();
}

// "1x3x224x224" or "1x224x224x3 (NHWC)": the shape forward() is given.
std::string input_shape(const EngineOptions& o, int b) {
  const std::string n = std::to_string(b), c = std::to_string(o.channels);
  const std::string h = std::to_string(o.input_height), w = std::to_string(o.input_width);
  return o.input_nhwc ? n + "x" + h + "x" + w + "x" + c + " (NHWC)"
                      : n + "x" + c + "x" + h + "x" + w;
}

}  // namespace

int Engine::Impl::warmup_total() const {
  const auto& s = opts.warmup_batch_sizes;
  return static_cast<int>(std::count_if(s.begin(), s.end(), [](int b) { return b >= 1; })) *
         std::max(1, opts.warmup_runs);
}

void Engine::Impl::progress(LoadProgress::Stage now, int done) {
  stage = now;
  if (!opts.on_progress) return;
  LoadProgress p;
  p.stage = now;
  p.done = done;
  p.total = warmup_total();
  p.elapsed_ms = ms_since(load_start);
  try {
    opts.on_progress(p);
  } catch (...) {  // a report must never fail the load
  }
}

// Reads the file into `module` (eval mode) and fills what it says about itself.
void Engine::Impl::read_model() {
  const std::string& path = opts.model_path;
  // Packed int8 weights are made for the engine current at load time;
  // onednn is the fast one on x86 in this libtorch (no fbgemm).
  const auto& q = at::globalContext().supportedQEngines();
  if (std::find(q.begin(), q.end(), at::QEngine::ONEDNN) != q.end())
    at::globalContext().setQEngine(at::QEngine::ONEDNN);
  info.qengine = qengine_name(at::globalContext().qEngine());

  check_torchscript_layout(path, verify_zip_archive(path));
  try {
    module = torch::jit::load(path, torch::kCPU);
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) throw;  // named by the load's stage (Engine::Engine)
    throw Error(ErrorKind::kModelInvalid, load_failure(path, message_of(e)));
  }
  module.eval();
  info.input_name = check_interface(module, path);
  info.model_quantized = graph_is_quantized(module);
}

// The requested precision against what the file holds.
void Engine::Impl::check_precision_request() const {
  const std::string& path = opts.model_path;
  if (opts.declared_int8 && !info.model_quantized)
    throw Error(ErrorKind::kModelInvalid, "model '" + path +
                                              "': its sidecar says precision int8 but the file "
                                              "holds no quantized operators");
  if (info.model_quantized &&
      (opts.precision == Precision::kFp32 || opts.precision == Precision::kBf16))
    throw Error(ErrorKind::kConfigInvalid,
                std::string("precision=") + to_string(opts.precision) + ": model '" + path +
                    "' is int8-quantized; load its float original for this precision, or use "
                    "precision=int8/auto");
  if (!info.model_quantized && opts.precision == Precision::kInt8)
    throw Error(ErrorKind::kConfigInvalid,
                "precision=int8: model '" + path +
                    "' is not quantized; make an int8 copy with models/quantize.py");
}

// Freeze + optimize_for_inference; on failure keeps what worked and says why.
torch::jit::Module Engine::Impl::optimise(const torch::jit::Module& m) {
  torch::jit::Module out = m;
  try {
    // freeze inlines weights as constants and folds conv+bn; optimize_for_
    // inference then fuses with oneDNN and prepacks weights.
    out = torch::jit::freeze(m);
    info.frozen = true;
    // Quantized ops are oneDNN kernels already; optimize_for_inference only
    // adds layout conversions around them (MobileNetV2 int8, 2 threads:
    // 5.8 ms frozen vs 7.1 ms optimised).
    if (info.model_quantized) {
      info.optimize_note =
          "int8 model: frozen only (optimize_for_inference slows quantized graphs)";
      if (!opts.input_uint8 && (input_quant = take_input_quantization(out))) {
        info.input_quantized_by_engine = true;
        info.optimize_note += "; input quantized by the engine (scale " +
                              std::to_string(input_quant->scale) + ", zero point " +
                              std::to_string(input_quant->zero_point) + ")";
      }
      return out;
    }
    out = torch::jit::optimize_for_inference(out);
    info.optimized = true;
  } catch (const std::exception& e) {
    info.optimize_note = message_of(e);
  }
  return out;
}

// report: progress per forward run (the first pass only; a bf16 re-warm
// would count the same runs again).
void Engine::Impl::warm_up(bool report) {
  int done = 0;
  if (report) progress(LoadProgress::Stage::kWarmup, done);
  for (int b : opts.warmup_batch_sizes)
    if (b >= 1)
      warm_up_at(b, [&] {
        if (report) progress(LoadProgress::Stage::kWarmup, ++done);
      });
}

void Engine::Impl::warm_up_at(int b, const std::function<void()>& after_run) {
  const std::string& path = opts.model_path;
  try {
    std::vector<float> zeros(
        static_cast<std::size_t>(b) * opts.input_height * opts.input_width * opts.channels, 0.f);
    for (int i = 0; i < std::max(1, opts.warmup_runs); ++i) {
      forward(zeros.data(), b);
      after_run();
    }
  } catch (const std::exception& e) {
    // Checked first: libtorch's allocator error may arrive wrapped in an Error.
    if (is_out_of_memory(e)) {
      const Error oom = input_too_large(opts.input_width, opts.input_height, opts.channels, b,
                                        bytes_per_value(), e);
      throw Error(oom.kind(), "model '" + path + "': " + oom.what());
    }
    if (dynamic_cast<const Error*>(&e))
      throw Error(ErrorKind::kModelInvalid, "model '" + path + "': " + e.what());
    throw Error(
        ErrorKind::kModelInvalid,
        "model '" + path + "' fails on a " + input_shape(opts, b) +
            " input (check input_width/input_height/channel_order/input_layout): " + message_of(e));
  }
}

// On the engine's thread.
void Engine::Impl::load() {
  auto t0 = EngineClock::now();
  load_start = t0;
  progress(LoadProgress::Stage::kRead, 0);
  setup_threads();
  read_model();
  check_precision_request();
  if (info.model_quantized && info.qengine != "onednn")
    info.precision_note = "quantized engine is " + info.qengine + ", not onednn (slow int8)";
  info.precision = info.model_quantized ? Precision::kInt8 : Precision::kFp32;
  info.load_ms = ms_since(t0);

  t0 = EngineClock::now();
  progress(LoadProgress::Stage::kOptimize, 0);
  const torch::jit::Module eval = module;
  if (opts.optimize) module = optimise(eval);
  info.optimize_ms = ms_since(t0);

  t0 = EngineClock::now();
  warm_up(true);
  // A byte-input model converts its input itself: no bf16 cast to apply.
  if (!info.model_quantized && may_choose_bf16(opts)) {
    choose_bf16(eval, opts.precision == Precision::kBf16);
    if (bf16) warm_up(false);
  } else if (!info.model_quantized && opts.precision == Precision::kAuto) {
    info.precision_note =
        opts.input_uint8 ? "auto: fp32 (uint8-input model converts its input itself)"
        : !at::globalContext().userEnabledMkldnn() ? "auto: fp32 (oneDNN disabled)"
                                                   : "auto: fp32 (this CPU has no AVX512-BF16)";
  }
  info.warmup_ms = ms_since(t0);
}

}  // namespace torchinfer
