// arange, range, linspace and logspace with out=: CPU's and CUDA's kernels
// resize `out` only when its element count differs from the range's, and
// otherwise fill it in its own shape, in logical order. The fallback alone
// would follow the Python meta functions, which make any `out` of another
// shape one-dimensional. So a multi-dimensional `out` gets the range
// through a one-dimensional foo tensor of its element count, then a copy.
// The overloads whose ends are tensors are left to ATen's composite
// kernels, as on CUDA: they read the ends as numbers and call these.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "aten/Fallback.h"

namespace foo::aten {
namespace {

void range_out(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::Tensor out = stack->back().toTensor();
  if (out.dim() <= 1) return foo_cpu_fallback(op, stack);
  stack->back() = at::empty({out.numel()}, out.options());
  foo_cpu_fallback(op, stack);
  at::Tensor values = stack->back().toTensor();
  if (values.numel() != out.numel()) out.resize_(values.sizes());  // as CPU: a 1-D out of the range's size
  out.copy_(values.view(out.sizes()));
  stack->back() = out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {"arange.out", "arange.start_out", "range.out", "range.out_", "linspace.out", "logspace.out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&range_out>());
  }
}

}  // namespace
}  // namespace foo::aten
