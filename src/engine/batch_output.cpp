#include "engine/batch_output.h"

#include <cstdint>

#include "common/error.h"

namespace torchinfer {
namespace {

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

}  // namespace

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

struct BatchOutput::Impl {
  int batch = 0;
  double inference_ms = 0;
  std::vector<at::Tensor> owned;
  std::vector<TensorView> views;
  std::vector<bool> finite;  // per frame
};

std::shared_ptr<const BatchOutput> make_batch_output(const c10::IValue& y, const at::Tensor& input,
                                                     const torch::jit::Module& module, int batch,
                                                     double inference_ms) {
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
    if (t.is_alias_of(input) || aliases_module_state(t, module)) t = t.clone();
    if (batch > 1 && (t.dim() == 0 || t.size(0) != batch))
      throw Error(ErrorKind::kModelInvalid,
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
  impl->inference_ms = inference_ms;
  return std::make_shared<BatchOutput>(std::move(impl));
}

BatchOutput::BatchOutput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchOutput::~BatchOutput() = default;
const std::vector<TensorView>& BatchOutput::tensors() const {
  return impl_->views;
}
double BatchOutput::inference_ms() const {
  return impl_->inference_ms;
}
int BatchOutput::batch() const {
  return impl_->batch;
}

std::shared_ptr<const BatchOutput> BatchOutput::frame_copy(int k) const {
  if (k < 0 || k >= impl_->batch)
    throw Error(ErrorKind::kInvalidArgument, "frame index out of range");
  auto impl = std::make_unique<Impl>();
  impl->batch = 1;
  impl->inference_ms = impl_->inference_ms;
  impl->finite.assign(1, impl_->finite[static_cast<std::size_t>(k)]);
  for (std::size_t i = 0; i < impl_->owned.size(); ++i) {
    const at::Tensor& t = impl_->owned[i];
    // A batch of one may have an output without a batch dimension.
    at::Tensor c = impl_->batch > 1 ? t.narrow(0, k, 1).clone() : t.clone();
    TensorView v = impl_->views[i];
    v.dims.assign(c.sizes().begin(), c.sizes().end());
    v.data = c.data_ptr();
    v.bytes = static_cast<std::size_t>(c.numel()) * c.element_size();
    impl->views.push_back(std::move(v));
    impl->owned.push_back(std::move(c));
  }
  return std::make_shared<BatchOutput>(std::move(impl));
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

}  // namespace torchinfer
