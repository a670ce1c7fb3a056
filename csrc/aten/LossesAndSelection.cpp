// nll_loss_forward and where, whose output shapes are simple to compute on
// the host: left to the fallback, each call would pay for a meta pass
// implemented in Python.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/nll_loss_forward.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/where.h>
#include <torch/library.h>

#include "aten/HostShaped.h"
#include "aten/Structured.h"

namespace foo::aten {
namespace {

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  const char* name = "aten::nll_loss_forward";
  c10::Device device = self.device();
  check_on_device(device, target, name);
  check_argument(device, weight, name);
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  bool per_sample = reduction == at::Reduction::None && self.dim() == 2;
  at::Tensor output = at::empty(per_sample ? std::vector<int64_t>{self.size(0)} : std::vector<int64_t>{},
                                self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  using Optional = Carry<const std::optional<at::Tensor>&>;
  queue_into(device, name, {output, total_weight},
             [s = KernelTensor(self), t = KernelTensor(target), w = Optional::keep(weight), reduction, ignore_index] {
               auto [loss, total] = at::nll_loss_forward(s.cpu(), t.cpu(), Optional::give(w), reduction, ignore_index);
               return std::vector<at::Tensor>{loss, total};
             });
  return {output, total_weight};
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const char* name = "aten::where";
  c10::Device device = condition.device().type() == c10::DeviceType::PrivateUse1 ? condition.device()
                       : self.device().type() == c10::DeviceType::PrivateUse1    ? self.device()
                                                                                 : other.device();
  for (const at::Tensor* t : {&condition, &self, &other}) check_on_device(device, *t, name);
  TORCH_CHECK(condition.scalar_type() == at::kBool, "where expected condition to be a boolean tensor, but got a "
              "tensor with dtype ", condition.scalar_type());
  auto shape = at::infer_size_dimvector(at::infer_size_dimvector(condition.sizes(), self.sizes()), other.sizes());
  at::Tensor out = at::empty(shape, self.options().dtype(at::result_type(self, other)).device(device));
  queue_into(device, name, {out}, [c = CarriedTensor(condition), s = CarriedTensor(self), o = CarriedTensor(other)] {
    return std::vector<at::Tensor>{at::where(c.get(), s.get(), o.get())};
  });
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("where.self", TORCH_FN(where));
}

}  // namespace
}  // namespace foo::aten
