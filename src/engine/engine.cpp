#include "engine/engine.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/version.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/cpu_set.h"
#include "common/error.h"
#include "common/memory_error.h"
#include "common/precision_choice.h"
#include "common/sysinfo.h"
#include "common/zip_check.h"
#include "engine/input_quant.h"
namespace torchinfer {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// c10::Error::what() carries a C++ backtrace and TorchScript source excerpts
// over many lines; an operator's error line needs one line of text.
std::string message_of(const std::exception& e) {
  auto* ce = dynamic_cast<const c10::Error*>(&e);
  std::string raw = ce ? ce->what_without_backtrace() : e.what();
  // Interpreter errors quote the TorchScript graph first; the cause is last.
  if (raw.find("Traceback of TorchScript") != std::string::npos) {
    while (!raw.empty() && (raw.back() == '\n' || raw.back() == ' ')) raw.pop_back();
    raw = raw.substr(raw.find_last_of('\n') + 1);
  }
  std::string out;
  for (char c : raw) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// libtorch's reasons for refusing a file (written for its developers) turned
// into what the operator should do; libtorch's text follows for reference.
std::string load_failure(const std::string& path, std::string why) {
  const std::string file = "model file '" + path + "'";
  const std::string export_hint =
      "export it with models/export.py, or torch.jit.trace/torch.jit.script + torch.jit.save";
  if (why.find("required keyword attribute") != std::string::npos)
    return file +
           " was saved after torch.jit.optimize_for_inference (or torch.jit.freeze) in Python, "
           "which libtorch cannot load: save the traced or scripted model before optimising it "
           "(torchinfer optimises at load) (libtorch: " +
           why + ")";
  if (why.find("constants.pkl") != std::string::npos)
    return file + " is not TorchScript (a torch.save() file?): " + export_hint +
           " (libtorch: " + why + ")";
  if (why.find("INTERNAL ASSERT FAILED") != std::string::npos) {
    // libtorch asks the user to report a bug; the file is what is wrong.
    const auto cut = why.find("please report a bug");
    if (cut != std::string::npos) why = why.substr(0, cut);
    while (!why.empty() && (why.back() == ' ' || why.back() == '.')) why.pop_back();
    return file + " is damaged or was not written by torch.jit.save, so libtorch cannot read it: " +
           export_hint + " again (libtorch: " + why + ")";
  }
  return file + " could not be loaded as TorchScript: " + export_hint + " (libtorch: " + why + ")";
}

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kDouble:
      return DType::kFloat64;
    case at::kInt:
      return DType::kInt32;
    case at::kLong:
      return DType::kInt64;
    case at::kByte:
      return DType::kUInt8;
    case at::kChar:
      return DType::kInt8;
    case at::kBool:
      return DType::kBool;
    default:
      break;
  }
  throw Error(ErrorKind::kModelInvalid,
              std::string("output dtype ") + c10::toString(t.scalar_type()) + " is not supported");
}

// Dense, contiguous CPU tensor in a dtype TensorView can describe.
at::Tensor normalise_output(at::Tensor t) {
  if (t.is_mkldnn()) t = t.to_dense();
  if (t.is_quantized()) t = t.dequantize();
  if (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16) t = t.to(at::kFloat);
  return t.contiguous();
}

// Per frame of a [batch, ...] float output: false if any element is NaN or
// infinite, i.e. has an all-ones exponent. The largest exponent field is a
// branch-free max over integers, which vectorises and leaves the check
// memory-bound (2.1 M floats, a YOLOv5 640 output: ~1 ms here).
template <typename Bits>
void mark_non_finite(const at::Tensor& t, int batch, std::vector<bool>& finite) {
  constexpr Bits exp_mask = sizeof(Bits) == 4 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
  const auto* p = static_cast<const Bits*>(t.data_ptr());
  const std::size_t per_frame =
      static_cast<std::size_t>(t.numel()) / static_cast<std::size_t>(batch);
  for (int k = 0; k < batch; ++k) {
    if (!finite[k]) continue;
    const Bits* f = p + per_frame * static_cast<std::size_t>(k);
    Bits top = 0;
    for (std::size_t i = 0; i < per_frame; ++i) {
      const Bits e = f[i] & exp_mask;
      top = e > top ? e : top;
    }
    if (top == exp_mask) finite[k] = false;
  }
}

// Tensors a module holds (parameters, buffers, other tensor attributes, in
// lists, tuples and dicts too), recursively through submodules.
void collect_state(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) collect_state(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) collect_state(e, out);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) collect_state(kv.value(), out);
  }
}

// A forward() may return (a view of) a tensor the module keeps and updates
// in place on the next call; attached to a buffer, such a result would
// change under its reader. Storage identity is what matters, not the view.
bool aliases_module_state(const at::Tensor& t, const torch::jit::Module& m) {
  if (!t.has_storage()) return false;
  std::vector<at::Tensor> state;
  for (const auto& a : m.named_attributes(/*recurse=*/true)) collect_state(a.value, state);
  for (const at::Tensor& s : state)
    if (s.defined() && s.has_storage() && t.is_alias_of(s)) return true;
  return false;
}

const char* kUnsupportedOutput =
    "forward() must return a Tensor, a tuple or list of Tensors, or a Dict[str, Tensor]";

void collect_outputs(const c10::IValue& v, std::vector<std::pair<std::string, at::Tensor>>& out) {
  if (v.isTensor()) {
    out.emplace_back("output", normalise_output(v.toTensor()));
    return;
  }
  auto add_list = [&](const std::vector<c10::IValue>& items) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isTensor())
        throw Error(ErrorKind::kModelInvalid, std::string(kUnsupportedOutput) + "; element " +
                                                  std::to_string(i) + " is " + items[i].tagKind());
      out.emplace_back("output" + std::to_string(i), normalise_output(items[i].toTensor()));
    }
  };
  if (v.isTuple()) return add_list(v.toTupleRef().elements().vec());
  if (v.isTensorList()) {
    std::vector<c10::IValue> items;
    for (const at::Tensor& t : v.toTensorVector()) items.emplace_back(t);
    return add_list(items);
  }
  if (v.isList()) return add_list(v.toListRef().vec());
  if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) {
      if (!kv.key().isString() || !kv.value().isTensor())
        throw Error(ErrorKind::kModelInvalid, kUnsupportedOutput);
      out.emplace_back(kv.key().toStringRef(), normalise_output(kv.value().toTensor()));
    }
    return;
  }
  throw Error(ErrorKind::kModelInvalid,
              std::string(kUnsupportedOutput) + "; it returns " + v.tagKind());
}

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

// bf16 kernels of oneDNN need AVX512-BF16; elsewhere bf16 is emulated and
// slower than fp32, so precision=auto does not time it.
bool native_bf16() {
  return isa_from_flags(read_cpuinfo().flags).avx512_bf16;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string qengine_name(at::QEngine q) {
  std::string s = c10::toString(q);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Runs closures on one long-lived thread and hands back results or
// exceptions. One call at a time: forward() is not reentrant per module.
class InferenceThread {
 public:
  InferenceThread() : thread_([this] { loop(); }) {}
  ~InferenceThread() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void call(const std::function<void()>& f) {
    std::lock_guard<std::mutex> serial(call_m_);
    std::unique_lock<std::mutex> lk(m_);
    task_ = &f;
    done_ = false;
    cv_.notify_all();
    cv_.wait(lk, [&] { return done_; });
    std::exception_ptr e = err_;
    err_ = nullptr;
    if (e) std::rethrow_exception(e);
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || task_; });
      if (!task_) return;
      const std::function<void()>* f = task_;
      lk.unlock();
      std::exception_ptr e;
      try {
        (*f)();
      } catch (...) {
        e = std::current_exception();
      }
      lk.lock();
      task_ = nullptr;
      err_ = e;
      done_ = true;
      cv_.notify_all();
    }
  }

  std::mutex call_m_, m_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;
  bool done_ = false, stop_ = false;
  std::exception_ptr err_;
  std::thread thread_;  // last: starts after the fields it reads exist
};

// Engine ids for RunInferenceHere: never reused, unlike addresses.
std::atomic<std::uint64_t> next_engine_id{1};

}  // namespace

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

bool may_choose_bf16(const EngineOptions& o) {
  return !o.input_uint8 &&
         (o.precision == Precision::kBf16 ||
          (o.precision == Precision::kAuto && at::globalContext().userEnabledMkldnn() &&
           (o.probe_bf16 || native_bf16())));
}

int default_threads(const std::vector<int>& cores) {
  if (!cores.empty()) return static_cast<int>(cores.size());
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.empty()) return 1;
  return std::max(1, physical_cores(allowed));
}

RuntimeInfo runtime_info() {
  RuntimeInfo r;
  r.torch_version = TORCH_VERSION;
  const dnnl_version_t* v = dnnl_version();
  r.dnnl_version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
      (v->hash && std::strcmp(v->hash, "N/A") != 0 ? std::string(" (") + v->hash + ")" : "");
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      r.dnnl_isa = "sse41";
      break;
    case dnnl_cpu_isa_avx:
      r.dnnl_isa = "avx";
      break;
    case dnnl_cpu_isa_avx2:
      r.dnnl_isa = "avx2";
      break;
    case dnnl_cpu_isa_avx2_vnni:
      r.dnnl_isa = "avx2_vnni";
      break;
    case dnnl_cpu_isa_avx512_core:
      r.dnnl_isa = "avx512_core";
      break;
    case dnnl_cpu_isa_avx512_core_vnni:
      r.dnnl_isa = "avx512_core_vnni";
      break;
    case dnnl_cpu_isa_avx512_core_bf16:
      r.dnnl_isa = "avx512_core_bf16";
      break;
    case dnnl_cpu_isa_avx512_core_amx:
      r.dnnl_isa = "avx512_core_amx";
      break;
    default:
      r.dnnl_isa = "other (" + std::to_string(static_cast<int>(dnnl_get_effective_cpu_isa())) + ")";
  }
  r.has_mkldnn = at::hasMKLDNN();
  r.mkldnn_enabled = at::globalContext().userEnabledMkldnn();
  for (at::QEngine q : at::globalContext().supportedQEngines())
    r.qengines.push_back(qengine_name(q));
  r.qengine = qengine_name(at::globalContext().qEngine());
  r.omp_max_threads = omp_get_max_threads();
  return r;
}

struct BatchOutput::Impl {
  int batch = 0;
  double inference_ms = 0;
  std::vector<at::Tensor> owned;
  std::vector<TensorView> views;
  std::vector<bool> finite;  // per frame
};

BatchOutput::BatchOutput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchOutput::~BatchOutput() = default;
const std::vector<TensorView>& BatchOutput::tensors() const {
  return impl_->views;
}
double BatchOutput::inference_ms() const {
  return impl_->inference_ms;
}
bool BatchOutput::frame_finite(int k) const {
  if (k < 0 || k >= impl_->batch)
    throw Error(ErrorKind::kInvalidArgument, "frame index out of range");
  return impl_->finite[static_cast<std::size_t>(k)];
}

std::vector<TensorView> BatchOutput::frame(int k) const {
  if (k < 0 || k >= impl_->batch)
    throw Error(ErrorKind::kInvalidArgument, "frame index out of range");
  std::vector<TensorView> out = impl_->views;
  if (impl_->batch == 1) return out;
  for (TensorView& v : out) {
    const std::size_t per_frame = v.bytes / static_cast<std::size_t>(impl_->batch);
    v.data = static_cast<const char*>(v.data) + per_frame * static_cast<std::size_t>(k);
    v.bytes = per_frame;
    v.dims[0] = 1;
  }
  return out;
}

struct Engine::Impl {
  EngineOptions opts;
  EngineInfo info;
  torch::jit::Module module;
  bool bf16 = false;  // module expects bfloat16 input
  // Set when the engine quantizes the input itself (see input_quant.h).
  std::optional<InputQuantization> input_quant;
  std::unique_ptr<InferenceThread> thread;
  const std::uint64_t id = next_engine_id++;
  // One forward() at a time, whichever thread runs it (the module is not
  // reentrant); uncontended in a pipeline, where one thread runs batches.
  std::mutex forward_mu;
  // A RunInferenceHere thread ran this engine: the engine thread's own team
  // is then released between its uses. libgomp counts every team's threads,
  // idle or not, and once they outnumber the CPUs it cuts every wait's spin
  // to 100 iterations (the bounded-spin policy would silently vanish).
  std::atomic<bool> handed_over{false};
  bool team_released = false;  // inference thread only

  // Inference thread only: its team pinned again if it was released.
  void own_team() {
    if (!team_released) return;
    setup_threads();
    team_released = false;
  }
  void release_own_team() {
    omp_pause_resource_all(omp_pause_soft);
    team_released = true;
  }

  // Inference thread (or a RunInferenceHere thread), under forward_mu.
  std::shared_ptr<const BatchOutput> forward(const void* input, int batch) {
    const auto t0 = Clock::now();
    const int64_t H = opts.input_height, W = opts.input_width, C = opts.channels;
    const auto dtype = opts.input_uint8 ? at::kByte : at::kFloat;
    // NHWC memory seen as an NCHW tensor with channels_last strides, or as
    // itself for an NHWC model: no copy either way.
    at::Tensor x = opts.input_nhwc
                       ? torch::from_blob(const_cast<void*>(input), {batch, H, W, C}, dtype)
                       : torch::from_blob(const_cast<void*>(input), {batch, C, H, W},
                                          {H * W * C, 1, W * C, C}, dtype);
    c10::IValue y;
    {
      c10::InferenceMode guard;
      // .to() preserves the channels_last strides.
      y = module.forward({input_quant ? quantize_input(x, *input_quant)
                          : bf16      ? x.to(at::kBFloat16)
                                      : x});
    }
    auto impl = std::make_unique<BatchOutput::Impl>();
    impl->batch = batch;
    impl->finite.assign(static_cast<std::size_t>(batch), true);
    std::vector<std::pair<std::string, at::Tensor>> outs;
    collect_outputs(y, outs);
    if (outs.empty()) throw Error(ErrorKind::kModelInvalid, "forward() returned no tensors");
    for (auto& [name, t] : outs) {
      // A model may hand back (a view of) its input, whose buffer the caller
      // refills for the next batch: results must not change under the reader.
      // The same goes for a tensor the module keeps as state; only then is
      // the output copied, so the usual fresh output stays zero-copy.
      if (t.is_alias_of(x) || aliases_module_state(t, module)) t = t.clone();
      if (batch > 1 && (t.dim() == 0 || t.size(0) != batch))
        throw Error(
            ErrorKind::kModelInvalid,
            "output '" + name + "' has no batch dimension of size " + std::to_string(batch));
      if (t.scalar_type() == at::kFloat) mark_non_finite<std::uint32_t>(t, batch, impl->finite);
      if (t.scalar_type() == at::kDouble) mark_non_finite<std::uint64_t>(t, batch, impl->finite);
      TensorView v;
      v.name = name;
      v.dtype = dtype_of(t);
      v.dims.assign(t.sizes().begin(), t.sizes().end());
      v.data = t.data_ptr();
      v.bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
      impl->views.push_back(std::move(v));
      impl->owned.push_back(std::move(t));
    }
    impl->inference_ms = ms_since(t0);
    return std::make_shared<BatchOutput>(std::move(impl));
  }

  // Inference thread only. libgomp reuses this thread's team for every later
  // parallel region (ATen's and oneDNN's), so pinning it once here sticks.
  void setup_threads() {
    // ATen sets a thread's count from its global one at the thread's first
    // parallel call: let that happen now, not after ours.
    at::internal::lazy_init_num_threads();
    at::set_num_threads(info.threads);
    std::vector<int> tids(static_cast<std::size_t>(info.threads), 0);
    std::vector<std::string> errors(tids.size());
#pragma omp parallel num_threads(info.threads)
    {
      const int t = omp_get_thread_num();
      if (t < static_cast<int>(tids.size())) {
        tids[t] = current_tid();
        if (!info.cores.empty()) {
          try {
            pin_current_thread({info.cores[t % info.cores.size()]});
          } catch (const std::exception& e) {
            errors[t] = e.what();
          }
        }
      }
    }
    for (const auto& e : errors)
      if (!e.empty()) throw Error(ErrorKind::kConfigInvalid, e);
    if (std::this_thread::get_id() == own_thread) info.thread_ids = tids;
  }
  std::thread::id own_thread;

  double time_runs(const float* input, int batch, int runs) {
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) t.push_back(forward(input, batch)->inference_ms());
    return median(t);
  }

  Clock::time_point load_start;
  int warmup_total() const {
    const auto& s = opts.warmup_batch_sizes;
    return static_cast<int>(std::count_if(s.begin(), s.end(), [](int b) { return b >= 1; })) *
           std::max(1, opts.warmup_runs);
  }
  void progress(LoadProgress::Stage stage, int done) {
    if (!opts.on_progress) return;
    LoadProgress p;
    p.stage = stage;
    p.done = done;
    p.total = warmup_total();
    p.elapsed_ms = ms_since(load_start);
    try {
      opts.on_progress(p);
    } catch (...) {  // a report must never fail the load
    }
  }

  // report: progress per forward run (the first pass only; a bf16 re-warm
  // would count the same runs again).
  void warm_up(const std::string& path, bool report) {
    int done = 0;
    if (report) progress(LoadProgress::Stage::kWarmup, done);
    for (int b : opts.warmup_batch_sizes)
      if (b >= 1)
        warm_up_at(path, b, [&] {
          if (report) progress(LoadProgress::Stage::kWarmup, ++done);
        });
  }

  void warm_up_at(const std::string& path, int b, const std::function<void()>& after_run) {
    const std::string shape =
        opts.input_nhwc
            ? std::to_string(b) + "x" + std::to_string(opts.input_height) + "x" +
                  std::to_string(opts.input_width) + "x" + std::to_string(opts.channels) + " (NHWC)"
            : std::to_string(b) + "x" + std::to_string(opts.channels) + "x" +
                  std::to_string(opts.input_height) + "x" + std::to_string(opts.input_width);
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
                                          opts.input_uint8 ? 1 : 4, e);
        throw Error(oom.kind(), "model '" + path + "': " + oom.what());
      }
      if (dynamic_cast<const Error*>(&e))
        throw Error(ErrorKind::kModelInvalid, "model '" + path + "': " + e.what());
      throw Error(ErrorKind::kModelInvalid,
                  "model '" + path + "' fails on a " + shape +
                      " input (check input_width/input_height/channel_order/input_layout): " +
                      message_of(e));
    }
  }

  // Freeze + optimize_for_inference; on failure keeps what worked and says why.
  torch::jit::Module optimise(const torch::jit::Module& m, bool quantized, bool* frozen,
                              bool* optimized, std::string* note) {
    torch::jit::Module out = m;
    try {
      // freeze inlines weights as constants and folds conv+bn; optimize_for_
      // inference then fuses with oneDNN and prepacks weights.
      out = torch::jit::freeze(m);
      *frozen = true;
      // Quantized ops are oneDNN kernels already; optimize_for_inference only
      // adds layout conversions around them (MobileNetV2 int8, 2 threads:
      // 5.8 ms frozen vs 7.1 ms optimised).
      if (quantized) {
        *note = "int8 model: frozen only (optimize_for_inference slows quantized graphs)";
        if (!opts.input_uint8 && (input_quant = take_input_quantization(out))) {
          info.input_quantized_by_engine = true;
          *note += "; input quantized by the engine (scale " + std::to_string(input_quant->scale) +
                   ", zero point " + std::to_string(input_quant->zero_point) + ")";
        }
        return out;
      }
      out = torch::jit::optimize_for_inference(out);
      *optimized = true;
    } catch (const std::exception& e) {
      *note = message_of(e);
    }
    return out;
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

  // Largest |bf16 - fp32| over all float outputs on `input`, and largest |fp32|.
  void bf16_error(torch::jit::Module& fp32_module, torch::jit::Module& bf16_module,
                  const float* input, int b, double* max_diff, double* max_ref) {
    const int64_t H = opts.input_height, W = opts.input_width, C = opts.channels;
    at::Tensor x = opts.input_nhwc
                       ? torch::from_blob(const_cast<float*>(input), {b, H, W, C}, at::kFloat)
                       : torch::from_blob(const_cast<float*>(input), {b, C, H, W},
                                          {H * W * C, 1, W * C, C}, at::kFloat);
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
  bool precision_key(int b, PrecisionKey* key, std::string* note) {
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

  // Decides fp32 vs bf16 at the largest warm-up batch. `eval` is the unfrozen
  // eval-mode module the bf16 copy is made from. precision=auto applies
  // decide_precision() (precision_choice.h) once per model, CPU, threads,
  // batch and libtorch, and reuses the cached decision afterwards, so that
  // the same setup gets the same precision on every start.
  void choose_bf16(const torch::jit::Module& eval, bool requested) {
    const int b = opts.precision_batch > 0
                      ? opts.precision_batch
                      : std::max(1, *std::max_element(opts.warmup_batch_sizes.begin(),
                                                      opts.warmup_batch_sizes.end()));
    if (requested && opts.precision_decided) {
      module = make_bf16(eval);
      bf16 = true;
      info.precision = Precision::kBf16;
      info.precision_note = "bf16, as the model's first lane decided";
      return;
    }
    progress(LoadProgress::Stage::kPrecision, warmup_total());
    std::vector<float> zeros(
        static_cast<std::size_t>(b) * opts.input_height * opts.input_width * opts.channels, 0.f);

    PrecisionKey key;
    const std::string dir = precision_cache_dir();
    std::string cache_note;
    const bool keyed = !requested && precision_key(b, &key, &cache_note);
    if (keyed) {
      if (auto c = read_cached_decision(dir, key, &cache_note)) {
        info.precision_from_cache = true;
        info.precision_cache_file = c->path;
        info.fp32_ms = c->decision.fp32_ms;
        info.bf16_ms = c->decision.bf16_ms;
        const std::string src = " (cached " + c->created + ", " + c->path + ")";
        if (!c->decision.bf16) {
          info.precision = Precision::kFp32;
          info.precision_note = "auto: fp32" + src;
          return;
        }
        try {
          module = make_bf16(eval);
          bf16 = true;
          info.precision = Precision::kBf16;
          info.precision_note = "auto: bf16" + src;
          return;
        } catch (const std::exception& e) {
          // The file said bf16 but the copy fails now: decide afresh below.
          info.precision_from_cache = false;
          cache_note = "cached bf16 no longer runs (" + message_of(e) + "), deciding again";
        }
      }
    }

    torch::jit::Module fp32_module = module, bf16_module;
    const int runs = std::max(5, opts.warmup_runs);
    std::vector<double> t32, t16;
    double max_diff = 0, max_ref = 0;
    std::string failure;
    try {
      // The warm-up may not have run fp32 at b: its first call there builds
      // b's oneDNN primitives, which the timing below must not count.
      forward(zeros.data(), b);
      bf16_module = make_bf16(eval);
      module = bf16_module;
      bf16 = true;
      forward(zeros.data(), b);  // profiling runs
      forward(zeros.data(), b);
      // Interleaved, so load from other processes hits both alike.
      for (int i = 0; i < runs; ++i) {
        module = fp32_module;
        bf16 = false;
        t32.push_back(forward(zeros.data(), b)->inference_ms());
        module = bf16_module;
        bf16 = true;
        t16.push_back(forward(zeros.data(), b)->inference_ms());
        // One lost round keeps fp32 (the rule wants every round): emulated
        // bf16 is ~70x slower on AVX2, so timing on would only cost start time.
        if (t16.back() >= t32.back()) break;
      }
      if (t16.back() < t32.back())
        bf16_error(fp32_module, bf16_module, zeros.data(), b, &max_diff, &max_ref);
    } catch (const std::exception& e) {
      failure = message_of(e);
    }
    module = fp32_module;
    bf16 = false;
    info.precision = Precision::kFp32;
    if (!failure.empty()) {
      if (requested)
        throw Error(ErrorKind::kConfigInvalid,
                    "precision=bf16: the model does not run in bfloat16 (" + failure +
                        "); use precision=fp32 or auto");
      // Not cached: a failure may be passing (memory), and is quick to find again.
      info.precision_note = "auto: fp32 (bf16 failed: " + failure + ")";
      return;
    }
    PrecisionRule rule;
    // An explicit bf16 only needs to be faster; its accuracy is the user's call.
    if (requested) {
      rule.min_fp32_ms = 0;
      rule.max_rel_error = std::numeric_limits<double>::infinity();
    }
    const PrecisionDecision d = decide_precision(t32, t16, max_diff, max_ref, rule);
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
    if (keyed) {
      std::string write_note;
      info.precision_cache_file = write_cached_decision(dir, key, d, &write_note);
      if (!write_note.empty()) cache_note += (cache_note.empty() ? "" : "; ") + write_note;
    }
    if (!cache_note.empty()) info.precision_note += "; " + cache_note;
  }

  torch::jit::Module make_bf16(const torch::jit::Module& eval) {
    torch::jit::Module m = eval.clone();
    m.to(at::kBFloat16);
    // Frozen only: optimize_for_inference's oneDNN conversion is for fp32
    // and measured 3.6x slower than plain frozen bf16 on MobileNetV2.
    if (opts.optimize) m = torch::jit::freeze(m);
    return m;
  }

  // Inference thread only.
  void load() {
    own_thread = std::this_thread::get_id();
    const std::string& path = opts.model_path;
    auto t0 = Clock::now();
    load_start = t0;
    progress(LoadProgress::Stage::kRead, 0);
    setup_threads();
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
      throw Error(ErrorKind::kModelInvalid, load_failure(path, message_of(e)));
    }
    module.eval();

    // One image tensor in: every argument after `self` beyond the first must be optional.
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
    info.input_name = args[1].name();

    info.model_quantized = graph_is_quantized(module);
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
    if (info.model_quantized && info.qengine != "onednn")
      info.precision_note = "quantized engine is " + info.qengine + ", not onednn (slow int8)";
    info.precision = info.model_quantized ? Precision::kInt8 : Precision::kFp32;
    info.load_ms = ms_since(t0);

    t0 = Clock::now();
    progress(LoadProgress::Stage::kOptimize, 0);
    const torch::jit::Module eval = module;
    if (opts.optimize)
      module =
          optimise(eval, info.model_quantized, &info.frozen, &info.optimized, &info.optimize_note);
    info.optimize_ms = ms_since(t0);

    t0 = Clock::now();
    warm_up(path, true);
    // A byte-input model converts its input itself: no bf16 cast to apply.
    if (!info.model_quantized && may_choose_bf16(opts)) {
      choose_bf16(eval, opts.precision == Precision::kBf16);
      if (bf16) warm_up(path, false);
    } else if (!info.model_quantized && opts.precision == Precision::kAuto)
      info.precision_note =
          opts.input_uint8 ? "auto: fp32 (uint8-input model converts its input itself)"
          : !at::globalContext().userEnabledMkldnn() ? "auto: fp32 (oneDNN disabled)"
                                                     : "auto: fp32 (this CPU has no AVX512-BF16)";
    info.warmup_ms = ms_since(t0);
  }
};

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = options;
  const EngineOptions& o = impl_->opts;
  if (o.input_width < 1 || o.input_height < 1 || (o.channels != 1 && o.channels != 3))
    throw Error(ErrorKind::kInvalidArgument, "invalid model input geometry");
  if (o.warmup_batch_sizes.empty())
    throw Error(ErrorKind::kInvalidArgument, "no warm-up batch size given");
  // Validated here, on the caller's thread, so a bad list fails fast and
  // names the cores this process really has (taskset, cgroups).
  if (o.cores) impl_->info.cores = resolve_cpu_list(*o.cores, allowed_cpus());
  if (o.threads < 0 || o.threads > 1024)
    throw Error(ErrorKind::kConfigInvalid,
                "threads=" + std::to_string(o.threads) + " is out of range (0 = automatic)");
  impl_->info.threads = o.threads > 0 ? o.threads : default_threads(impl_->info.cores);
  impl_->thread = std::make_unique<InferenceThread>();
  impl_->thread->call([this] { impl_->load(); });
  // It may point into the caller (an element); nothing reports after load.
  impl_->opts.on_progress = nullptr;
}

Engine::~Engine() {
  // The module's tensors were made on the inference thread; dropping them
  // there keeps frees local to their arena.
  if (impl_ && impl_->thread) {
    try {
      impl_->thread->call([this] { impl_->module = torch::jit::Module(); });
    } catch (...) {
    }
    impl_->thread.reset();
  }
}

namespace {

// Runs body() where forward() runs, under the forward lock, with that
// thread's pinned team: on the calling thread inside a RunInferenceHere
// scope (setting its team up on the first call), else on the engine's own.
template <class Impl, class Body>
void on_inference_thread(Impl& impl, Body&& body) {
  if (run_here_detail::active) {
    std::lock_guard<std::mutex> lk(impl.forward_mu);
    if (run_here_detail::team_engine != impl.id) {
      impl.setup_threads();
      run_here_detail::team_engine = impl.id;
    }
    if (!impl.handed_over.exchange(true)) impl.thread->call([&impl] { impl.release_own_team(); });
    body();
  } else {
    impl.thread->call([&] {
      std::lock_guard<std::mutex> lk(impl.forward_mu);
      impl.own_team();
      body();
    });
  }
}

}  // namespace

std::shared_ptr<const BatchOutput> Engine::run(const void* input, int batch) {
  if (!input || batch < 1) throw Error(ErrorKind::kInvalidArgument, "empty batch");
  std::shared_ptr<const BatchOutput> out;
  try {
    on_inference_thread(*impl_, [&] { out = impl_->forward(input, batch); });
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kRuntime, "inference failed: " + message_of(e));
  }
  return out;
}

void Engine::parallel_for(int n, const std::function<void(int, int)>& fn) {
  if (n < 1) return;
  on_inference_thread(*impl_, [&] {
    const int threads = std::min(n, impl_->info.threads);
    if (threads <= 1) {
      for (int i = 0; i < n; ++i) fn(i, 0);
      return;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int i = 0; i < n; ++i) fn(i, omp_get_thread_num());
  });
}

void Engine::first_touch(void* data, std::size_t bytes) {
  if (!data || bytes == 0) return;
  impl_->thread->call([&] {
    impl_->own_team();
    // Page-sized pieces split statically over the team: each thread first
    // writes one contiguous run of pages.
    constexpr std::size_t kPage = 4096;
    auto* p = static_cast<unsigned char*>(data);
    const std::int64_t pages = static_cast<std::int64_t>((bytes + kPage - 1) / kPage);
#pragma omp parallel for schedule(static) num_threads(impl_->info.threads)
    for (std::int64_t i = 0; i < pages; ++i) {
      const std::size_t off = static_cast<std::size_t>(i) * kPage;
      std::memset(p + off, 0, std::min(kPage, bytes - off));
    }
    if (impl_->handed_over) impl_->release_own_team();
  });
}

const EngineInfo& Engine::info() const {
  return impl_->info;
}
const EngineOptions& Engine::options() const {
  return impl_->opts;
}

}  // namespace torchinfer
