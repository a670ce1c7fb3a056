// Checks that ATen's kernels make as they run, CPU's and CUDA's alike,
// instead of in their meta functions. CUDA's kernels make them on the host
// before they launch, so its errors come from the call; foo's kernels run
// later, on an executor, so these few are made here, on the host, when the
// operator is called, with the CPU kernels' messages. (The rest of such
// checks are reported by the next synchronization: README, Semantics.)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>

namespace foo::aten {

// For operators run by the fallback, by full name ("aten::dot"), on the
// call's arguments.
void check_fallback_arguments(const std::string& name, const torch::jit::Stack& args);

// For structured operators, by name ("aten::mm"): checks on the call's
// output and tensors (`self`, then its other tensor arguments), or nullptr.
using TensorChecks = void (*)(const at::Tensor& out, const std::vector<at::Tensor>& tensors);
TensorChecks structured_checks(std::string_view name);

// fill_ (and the factories built on it) converts the value to the tensor's
// dtype and refuses one that does not fit.
void check_fill_value(const at::Scalar& value, at::ScalarType dtype);

// gelu and gelu_backward: the approximation's name, read by CPU's and
// CUDA's out= functions (not by the meta function).
void check_gelu_approximate(std::string_view approximate);

// nll_loss takes Long or Byte class indices.
void check_nll_target(const at::Tensor& target);

// Convolution: weight and bias in the input's dtype.
void check_convolution_dtypes(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias);

}  // namespace foo::aten
