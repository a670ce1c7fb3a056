// fill_ and zero_, on the tensor's current stream; fill_ and index_fill_
// with a value tensor on another device than the filled one.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "aten/Fallback.h"
#include "aten/KernelChecks.h"
#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  check_fill_value(value, self.scalar_type());
  if (self.numel() == 0) return self;
  launch_op(self.device().index(), "aten::fill_", [t = TensorInfo(self), value] { t.cpu().fill_(value); },
            loop_kernel_threads(self));
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  if (self.numel() == 0) return self;
  launch_op(self.device().index(), "aten::zero_", [t = TensorInfo(self)] { t.cpu().zero_(); }, loop_kernel_threads(self));
  return self;
}

// fill_(value) and index_fill_(dim, index, value) with a 0-dim value
// tensor: ATen's kernels, CUDA's among them, read a value on another device
// than the filled tensor as a number first (value.item(), which waits for
// the value's stream), so a CPU tensor can be filled from a foo element.
// Values on the filled tensor's device stay on the stream (the fallback).
void fill_from_value_tensor(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  at::Tensor self = (*stack)[stack->size() - num_args].toTensor();
  const at::Tensor value = stack->back().toTensor();
  if (self.device() == value.device()) return foo_cpu_fallback(op, stack);
  TORCH_CHECK(value.dim() == 0, schema.name(), " only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  const at::Scalar number = value.item();
  if (num_args == 2) {
    self.fill_(number);
  } else {
    self.index_fill_((*stack)[stack->size() - 3].toInt(), (*stack)[stack->size() - 2].toTensor(), number);
  }
  torch::jit::drop(*stack, num_args);
  stack->push_back(self);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("zero_", TORCH_FN(zero));
  m.impl("fill_.Tensor", torch::CppFunction::makeFromBoxedFunction<&fill_from_value_tensor>());
  m.impl("index_fill_.int_Tensor", torch::CppFunction::makeFromBoxedFunction<&fill_from_value_tensor>());
}

}  // namespace
}  // namespace foo::aten
