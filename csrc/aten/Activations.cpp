// relu, which ATen does not implement as a structured operator: clamp_min's
// structured CPU kernel, on the stream.
#include <ATen/ops/clamp_min_cpu_dispatch.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

void queue_relu(const at::Tensor& self, const at::Tensor& out) {
  if (out.numel() == 0) return;
  bool in_place = out.is_same(self);
  launch_op(self.device().index(), "aten::relu", [o = TensorInfo(out), s = TensorInfo(self), in_place] {
    at::Tensor out_alias = o.cpu();
    at::cpu::clamp_min_out(out_alias, in_place ? out_alias : s.cpu(), 0);
  }, serial_work(out, self));
}

at::Tensor relu(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  at::Tensor out = at::empty_like(self);
  queue_relu(self, out);
  return out;
}

at::Tensor& relu_(at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  queue_relu(self, self);
  return self;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
}

}  // namespace
}  // namespace foo::aten
