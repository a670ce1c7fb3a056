// fill_ and zero_, on the tensor's current stream.
#include <torch/library.h>

#include "aten/KernelChecks.h"
#include "aten/KernelTensor.h"
#include "aten/Launch.h"

namespace foo::aten {
namespace {

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  check_fill_value(value, self.scalar_type());
  if (self.numel() == 0) return self;
  launch_op(self.device().index(), "aten::fill_", [t = KernelTensor(self), value] { t.cpu().fill_(value); });
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  if (self.numel() == 0) return self;
  launch_op(self.device().index(), "aten::zero_", [t = KernelTensor(self)] { t.cpu().zero_(); });
  return self;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("zero_", TORCH_FN(zero));
}

}  // namespace
}  // namespace foo::aten
