#include "aten/KernelArguments.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/ScalarOps.h>

namespace foo::aten {

at::Tensor pack_cpu_tensor(const at::Tensor& t) {
  // A wrapped number was made from a Python scalar for this one call:
  // nobody else holds it, so it cannot change.
  if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
  return t.clone();
}

std::optional<CpuScalar> CpuScalar::of(const at::Tensor& t) {
  if (!t.defined() || t.dim() != 0 || !t.is_cpu() || t.layout() != c10::kStrided || t.is_conj() || t.is_neg()) {
    return std::nullopt;
  }
  switch (t.scalar_type()) {
    // Every dtype here converts to c10::Scalar's double, int64 or complex
    // double and back exactly; the others are copied as tensors.
    case c10::kBool: case c10::kByte: case c10::kChar: case c10::kShort: case c10::kInt: case c10::kLong:
    case c10::kHalf: case c10::kBFloat16: case c10::kFloat: case c10::kDouble:
    case c10::kComplexHalf: case c10::kComplexFloat: case c10::kComplexDouble:
      break;
    default:
      return std::nullopt;
  }
  std::optional<CpuScalar> scalar;
  bool wrapped = t.unsafeGetTensorImpl()->is_wrapped_number();
  AT_DISPATCH_V2(t.scalar_type(), "CpuScalar", AT_WRAP([&] {
    scalar = CpuScalar(c10::Scalar(*t.const_data_ptr<scalar_t>()), t.scalar_type(), wrapped);
  }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), c10::kBool, c10::kHalf, c10::kBFloat16, c10::kComplexHalf);
  return scalar;
}

at::Tensor CpuScalar::tensor() const {
  at::Tensor t = at::detail::scalar_tensor_static(value_, dtype_, c10::Device(c10::kCPU));
  if (wrapped_) t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

PackedTensor::PackedTensor(const at::Tensor& t)
    : foo_(t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 ? std::optional<TensorInfo>(t)
                                                                           : std::nullopt),
      scalar_(foo_ ? std::nullopt : CpuScalar::of(t)),
      host_(foo_ || scalar_ ? at::Tensor() : pack_cpu_tensor(t)) {}

}  // namespace foo::aten
