// where(condition, self, other), whose output shape is a broadcast computed
// on the host. As on CUDA, a CPU 0-dim tensor may stand for any argument;
// it is read when the operator is called.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/where.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const char* name = "aten::where";
  c10::Device device = condition.device().type() == c10::DeviceType::PrivateUse1 ? condition.device()
                       : self.device().type() == c10::DeviceType::PrivateUse1    ? self.device()
                                                                                 : other.device();
  for (const at::Tensor* t : {&condition, &self, &other}) check_on_device_or_cpu_scalar(device, *t, name);
  TORCH_CHECK(condition.scalar_type() == at::kBool, "where expected condition to be a boolean tensor, but got a "
              "tensor with dtype ", condition.scalar_type());
  auto shape = at::infer_size_dimvector(at::infer_size_dimvector(condition.sizes(), self.sizes()), other.sizes());
  at::Tensor out = at::empty(shape, self.options().dtype(at::result_type(self, other)).device(device));
  launch_into(device, name, {out}, [c = PackedTensor(condition), s = PackedTensor(self), o = PackedTensor(other)] {
    return std::vector<at::Tensor>{at::where(c.unpack(), s.unpack(), o.unpack())};
  });
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("where.self", TORCH_FN(where));
}

}  // namespace
}  // namespace foo::aten
