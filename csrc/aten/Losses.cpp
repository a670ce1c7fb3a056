// Losses whose output shapes are simple to compute on the host (left to the
// fallback, each call would pay a meta pass, some implemented in Python):
// nll_loss, nll_loss2d and mse_loss, forward and backward.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/mse_loss_backward.h>
#include <ATen/ops/nll_loss2d_backward.h>
#include <ATen/ops/nll_loss2d_forward.h>
#include <ATen/ops/nll_loss_forward.h>
#include <torch/library.h>

#include "aten/KernelChecks.h"
#include "aten/Structured.h"

namespace foo::aten {
namespace {

using Optional = KernelArgument<const std::optional<at::Tensor>&>;

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  const char* name = "aten::nll_loss_forward";
  c10::Device device = self.device();
  check_same_device(device, target, name);
  check_argument<DeviceCheck::ExactSame>(device, weight, name);
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  check_nll_target(target);
  bool per_sample = reduction == at::Reduction::None && self.dim() == 2;
  at::Tensor output = at::empty(per_sample ? std::vector<int64_t>{self.size(0)} : std::vector<int64_t>{},
                                self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  using Optional = KernelArgument<const std::optional<at::Tensor>&>;
  launch_into(device, name, {output, total_weight},
             [s = TensorInfo(self), t = TensorInfo(target), w = Optional::pack(weight), reduction, ignore_index] {
               auto [loss, total] =
                   at::nll_loss_forward(s.cpu(), t.cpu(), Optional::unpack(w), reduction, ignore_index);
               return std::vector<at::Tensor>{loss, total};
             });
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  const char* name = "aten::nll_loss2d_forward";
  check_same_device(self.device(), target, name);
  check_argument<DeviceCheck::ExactSame>(self.device(), weight, name);
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              self.dim());
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  check_nll_target(target);
  at::Tensor output = reduction == at::Reduction::None
                          ? at::empty({self.size(0), self.size(2), self.size(3)}, self.options())
                          : at::empty({}, self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  launch_into(self.device(), name, {output, total_weight},
             [s = TensorInfo(self), t = TensorInfo(target), w = Optional::pack(weight), reduction, ignore_index] {
               auto [out, total] =
                   at::nll_loss2d_forward(s.cpu(), t.cpu(), Optional::unpack(w), reduction, ignore_index);
               return std::vector<at::Tensor>{out, total};
             });
  return {output, total_weight};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  const char* name = "aten::nll_loss2d_backward";
  for (const at::Tensor* t : {&grad_output, &target, &total_weight}) check_same_device(self.device(), *t, name);
  check_argument<DeviceCheck::ExactSame>(self.device(), weight, name);
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  launch_into(self.device(), name, {grad_input},
             [g = PackedTensor(grad_output), s = TensorInfo(self), t = TensorInfo(target), w = Optional::pack(weight),
              tw = PackedTensor(total_weight), reduction, ignore_index] {
               return std::vector<at::Tensor>{at::nll_loss2d_backward(g.unpack(), s.cpu(), t.cpu(), Optional::unpack(w),
                                                                      reduction, ignore_index, tw.unpack())};
             });
  return grad_input;
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  const char* name = "aten::mse_loss";
  check_on_device_or_cpu_scalar(self.device(), target, name);
  at::Tensor out = reduction == at::Reduction::None
                       ? at::empty(at::infer_size(self.sizes(), target.sizes()), self.options())
                       : at::empty({}, self.options());
  launch_into(self.device(), name, {out}, [s = TensorInfo(self), t = PackedTensor(target), reduction] {
    return std::vector<at::Tensor>{at::mse_loss(s.cpu(), t.unpack(), reduction)};
  });
  return out;
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  const char* name = "aten::mse_loss_backward";
  check_same_device(self.device(), grad_output, name);
  check_same_device(self.device(), target, name);
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  launch_into(self.device(), name, {grad_input},
             [g = PackedTensor(grad_output), s = TensorInfo(self), t = PackedTensor(target), reduction] {
               return std::vector<at::Tensor>{at::mse_loss_backward(g.unpack(), s.cpu(), t.unpack(), reduction)};
             });
  return grad_input;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
}

}  // namespace
}  // namespace foo::aten
