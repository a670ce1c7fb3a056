#include "aten/KernelChecks.h"

#include <functional>
#include <unordered_map>

#include <ATen/Dispatch_v2.h>
#include <c10/util/Exception.h>

namespace foo::aten {
namespace {

using Stack = torch::jit::Stack;

// ------------------------------------------------------- structured operators

void mm_dtypes(const at::Tensor&, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(t[0].dtype() == t[1].dtype(), "expected m1 and m2 to have the same dtype, but got: ", t[0].dtype(),
              " != ", t[1].dtype());
}

// bmm, baddbmm: every operand in the first one's dtype (checked by the
// kernel, which an empty output skips).
void batched_dtypes(const at::Tensor& out, const std::vector<at::Tensor>& t) {
  if (out.numel() == 0) return;
  for (size_t i = 1; i < t.size(); ++i) {
    TORCH_CHECK(t[i].scalar_type() == t[0].scalar_type(), "expected scalar type ", t[0].scalar_type(),
                " but found ", t[i].scalar_type());
  }
}

void addmv_dtypes(const at::Tensor&, const std::vector<at::Tensor>& t) {
  TORCH_CHECK(t[0].scalar_type() == t[1].scalar_type() && t[1].scalar_type() == t[2].scalar_type(),
              "addmv input tensors must have the same dtype, but got ", t[0].scalar_type(), ", ", t[1].scalar_type(),
              ", and ", t[2].scalar_type());
}

// ------------------------------------------------------- fallback operators

const at::Tensor& tensor_at(const Stack& args, size_t i) { return args[i].toTensor(); }

void dot_dtypes(const std::string&, const Stack& args) {
  const at::Tensor& a = tensor_at(args, 0);
  const at::Tensor& b = tensor_at(args, 1);
  // (vdot's message says "dot" too.)
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
}

// What ATen's index_put_ hands to masked_fill_ instead (which takes a value
// of any dtype): no accumulation, one CPU value, and a single boolean or
// byte mask on self's device.
bool goes_to_masked_fill(const at::Tensor& self, const c10::IValue& indices, const at::Tensor& values,
                         bool accumulate) {
  if (accumulate || values.numel() != 1 || !values.is_cpu()) return false;
  int masks = 0;
  for (const c10::IValue& index : indices.toListRef()) {
    if (index.isNone() || !index.toTensor().defined()) continue;
    const at::Tensor& mask = index.toTensor();
    if ((mask.scalar_type() != at::kBool && mask.scalar_type() != at::kByte) || mask.device() != self.device()) {
      return false;
    }
    ++masks;
  }
  return masks == 1;
}

void index_put_dtypes(const std::string&, const Stack& args) {
  const at::Tensor& self = tensor_at(args, 0);
  const at::Tensor& values = tensor_at(args, 2);
  if (goes_to_masked_fill(self, args[1], values, args.size() > 3 && args[3].toBool())) return;
  TORCH_CHECK(self.scalar_type() == values.scalar_type(), "Index put requires the source and destination dtypes match, got ",
              self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
}

void boolean_mask(const std::string&, const Stack& args) {
  const at::Tensor& mask = tensor_at(args, 1);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
}

using FallbackCheck = void (*)(const std::string& name, const Stack& args);

const std::unordered_map<std::string, FallbackCheck>& fallback_checks() {
  static const std::unordered_map<std::string, FallbackCheck> table = {
      {"aten::dot", dot_dtypes},
      {"aten::vdot", dot_dtypes},
      {"aten::_index_put_impl_", index_put_dtypes},
      {"aten::index_put_", index_put_dtypes},
      {"aten::index_put", index_put_dtypes},
      {"aten::masked_fill_.Scalar", boolean_mask},
      {"aten::masked_fill_.Tensor", boolean_mask},
      {"aten::masked_fill.Scalar", boolean_mask},
      {"aten::masked_fill.Tensor", boolean_mask},
  };
  return table;
}

}  // namespace

void check_fallback_arguments(const std::string& name, const Stack& args) {
  const auto& table = fallback_checks();
  auto it = table.find(name);
  if (it != table.end()) it->second(name, args);
}

TensorChecks structured_checks(std::string_view name) {
  if (name == "aten::mm") return mm_dtypes;
  if (name == "aten::bmm" || name == "aten::baddbmm") return batched_dtypes;
  if (name == "aten::addmv") return addmv_dtypes;
  return nullptr;
}

void check_fill_value(const at::Scalar& value, at::ScalarType dtype) {
  // The conversion the kernel makes, which raises "value cannot be
  // converted to type ... without overflow".
  AT_DISPATCH_V2(dtype, "fill_", AT_WRAP([&] { (void)value.to<scalar_t>(); }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX),
                 at::kComplexHalf, at::kHalf, at::kBool, at::kBFloat16, AT_EXPAND(AT_FLOAT8_TYPES),
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
}

void check_nll_target(const at::Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
}

void check_convolution_dtypes(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(input.dtype() == weight.dtype(), "Input type (", input.dtype(), ") and weight type (", weight.dtype(),
              ") should be the same");
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(input.dtype() == bias->dtype(), "Input type (", input.dtype(), ") and bias type (", bias->dtype(),
                ") should be the same");
  }
}

void check_layer_norm_parameters(at::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                                 const std::optional<at::Tensor>& bias) {
  for (const auto& [t, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!t->has_value() || !(*t)->defined()) continue;
    TORCH_CHECK((*t)->sizes().equals(normalized_shape), "Expected ", what, " to be of same shape as normalized_shape, but got ",
                what, " of shape ", (*t)->sizes(), " and normalized_shape = ", normalized_shape);
  }
}

}  // namespace foo::aten
