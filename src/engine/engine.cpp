#include "engine/engine.h"

#include <torch/script.h>

#include <chrono>
#include <sstream>

#include "common/error.h"
#include "common/zip_check.h"

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

}  // namespace

struct BatchOutput::Impl {
  int batch = 0;
  double inference_ms = 0;
  std::vector<at::Tensor> owned;
  std::vector<TensorView> views;
};

BatchOutput::BatchOutput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchOutput::~BatchOutput() = default;
int BatchOutput::batch_size() const {
  return impl_->batch;
}
const std::vector<TensorView>& BatchOutput::tensors() const {
  return impl_->views;
}
double BatchOutput::inference_ms() const {
  return impl_->inference_ms;
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

  std::shared_ptr<const BatchOutput> forward(const float* input, int batch) {
    const auto t0 = Clock::now();
    const int64_t H = opts.input_height, W = opts.input_width, C = opts.channels;
    // NHWC memory seen as an NCHW tensor with channels_last strides: no copy.
    at::Tensor x = torch::from_blob(const_cast<float*>(input), {batch, C, H, W},
                                    {H * W * C, 1, W * C, C}, at::kFloat);
    c10::IValue y;
    {
      c10::InferenceMode guard;
      y = module.forward({x});
    }
    auto impl = std::make_unique<BatchOutput::Impl>();
    impl->batch = batch;
    std::vector<std::pair<std::string, at::Tensor>> outs;
    collect_outputs(y, outs);
    if (outs.empty()) throw Error(ErrorKind::kModelInvalid, "forward() returned no tensors");
    for (auto& [name, t] : outs) {
      // A model may hand back (a view of) its input, whose buffer the caller
      // refills for the next batch: results must not change under the reader.
      if (t.is_alias_of(x)) t = t.clone();
      if (batch > 1 && (t.dim() == 0 || t.size(0) != batch))
        throw Error(
            ErrorKind::kModelInvalid,
            "output '" + name + "' has no batch dimension of size " + std::to_string(batch));
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
};

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = options;
  const EngineOptions& o = impl_->opts;
  if (o.input_width < 1 || o.input_height < 1 || (o.channels != 1 && o.channels != 3))
    throw Error(ErrorKind::kInvalidArgument, "invalid model input geometry");
  const std::string& path = o.model_path;

  auto t0 = Clock::now();
  verify_zip_archive(path);
  try {
    impl_->module = torch::jit::load(path, torch::kCPU);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kModelInvalid,
                "model file '" + path + "' could not be loaded: " + message_of(e));
  }
  impl_->module.eval();

  // One image tensor in: every argument after `self` beyond the first must be optional.
  if (!impl_->module.find_method("forward"))
    throw Error(ErrorKind::kModelInvalid, "model '" + path + "' has no forward() method");
  const auto& args = impl_->module.get_method("forward").function().getSchema().arguments();
  std::size_t required = 0;
  std::ostringstream names;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) ++required;
    names << (i > 1 ? ", " : "") << args[i].name();
  }
  if (args.size() < 2 || required > 1)
    throw Error(ErrorKind::kModelInvalid, "model '" + path + "': forward(" + names.str() +
                                              ") takes " + std::to_string(args.size() - 1) +
                                              " inputs; torchinfer feeds exactly one image tensor");
  impl_->info.input_name = args[1].name();
  impl_->info.load_ms = ms_since(t0);

  t0 = Clock::now();
  if (o.optimize) {
    try {
      // freeze inlines weights as constants; optimize_for_inference then folds
      // conv+bn, fuses with oneDNN and prepacks weights.
      torch::jit::Module frozen = torch::jit::freeze(impl_->module);
      impl_->info.frozen = true;
      impl_->module = frozen;
      impl_->module = torch::jit::optimize_for_inference(frozen);
      impl_->info.optimized = true;
    } catch (const std::exception& e) {
      impl_->info.optimize_note = message_of(e);
    }
  }
  impl_->info.optimize_ms = ms_since(t0);

  t0 = Clock::now();
  for (int b : o.warmup_batch_sizes) {
    if (b < 1) continue;
    std::vector<float> zeros(
        static_cast<std::size_t>(b) * o.input_height * o.input_width * o.channels, 0.f);
    for (int i = 0; i < std::max(1, o.warmup_runs); ++i) {
      try {
        impl_->forward(zeros.data(), b);
      } catch (const Error& e) {
        throw Error(ErrorKind::kModelInvalid, "model '" + path + "': " + e.what());
      } catch (const std::exception& e) {
        throw Error(ErrorKind::kModelInvalid,
                    "model '" + path + "' fails on a " + std::to_string(b) + "x" +
                        std::to_string(o.channels) + "x" + std::to_string(o.input_height) + "x" +
                        std::to_string(o.input_width) +
                        " input (check input_width/input_height/channel_order): " + message_of(e));
      }
    }
  }
  impl_->info.warmup_ms = ms_since(t0);
}

Engine::~Engine() = default;

std::shared_ptr<const BatchOutput> Engine::run(const float* input, int batch) {
  if (!input || batch < 1) throw Error(ErrorKind::kInvalidArgument, "empty batch");
  try {
    return impl_->forward(input, batch);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kRuntime, "inference failed: " + message_of(e));
  }
}

const EngineInfo& Engine::info() const {
  return impl_->info;
}
const EngineOptions& Engine::options() const {
  return impl_->opts;
}

}  // namespace torchinfer
