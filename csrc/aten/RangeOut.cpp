// arange, range, linspace and logspace with out=.
//
// arange and linspace: CPU's out= functions (shared with Meta) are host code
// around a DispatchStub, as CUDA's are: they check the range, warn when
// `out` has another element count, resize it and fill it in logical order
// through arange_stub / linspace_stub, whose foo entries queue CPU's loops.
// So they run on foo at the call, with CPU's warnings and errors.
//
// range and logspace: CPU's functions write the values themselves, on the
// host, so they go to the fallback. Its meta pass would follow the Python
// meta functions, which make any `out` of another shape one-dimensional,
// whereas CPU and CUDA resize `out` only when its element count differs and
// otherwise fill it in its own shape: a multi-dimensional `out` gets the
// range through a one-dimensional foo tensor of its element count, then a
// copy.
//
// The overloads whose ends are tensors are left to ATen's composite
// kernels, as on CUDA: they read the ends as numbers and call these.
#include <ATen/DeviceGuard.h>
#include <ATen/ops/arange_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linspace_native.h>
#include <torch/library.h>

#include "aten/Fallback.h"
#include "aten/QueuedStubs.h"

namespace foo::aten {
namespace {

at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out) {
  HostOpScope scope("aten::arange");
  const c10::DeviceGuard device_guard(out.device());
  return at::native::arange_out(start, end, step, out);
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out) {
  HostOpScope scope("aten::linspace");
  const c10::DeviceGuard device_guard(out.device());
  return at::native::linspace_out(start, end, steps, out);
}

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
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  for (const char* name : {"range.out", "range.out_", "logspace.out"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&range_out>());
  }
}

}  // namespace
}  // namespace foo::aten
