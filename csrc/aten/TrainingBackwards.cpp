// Losses and backward kernels common in training whose output shapes follow
// their inputs: batch-norm and embedding backward, mse_loss, nll_loss2d.
// Left to the fallback they would pay a meta pass (some in Python) per call.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/mse_loss_backward.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/nll_loss2d_backward.h>
#include <ATen/ops/nll_loss2d_forward.h>
#include <torch/library.h>

#include "aten/HostShaped.h"
#include "aten/Structured.h"

namespace foo::aten {
namespace {

using Optional = Carry<const std::optional<at::Tensor>&>;

at::Tensor empty_if(bool wanted, at::IntArrayRef size, const at::TensorOptions& options) {
  return wanted ? at::empty(size, options) : at::Tensor();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> mask) {
  const char* name = "aten::native_batch_norm_backward";
  c10::Device device = grad_out.device();
  check_on_device(device, input, name);
  for (const auto* t : {&weight, &running_mean, &running_var, &save_mean, &save_invstd}) check_argument(device, *t, name);
  auto param_options = weight.has_value() && weight->defined() ? weight->options() : input.options();
  at::Tensor grad_input = mask[0] ? at::empty_like(input, input.suggest_memory_format()) : at::Tensor();
  at::Tensor grad_weight = empty_if(mask[1], {input.size(1)}, param_options);
  at::Tensor grad_bias = empty_if(mask[2], {input.size(1)}, param_options);
  queue_into(device, name, {grad_input, grad_weight, grad_bias},
             [go = KernelTensor(grad_out), in = KernelTensor(input), w = Optional::keep(weight),
              rm = Optional::keep(running_mean), rv = Optional::keep(running_var), sm = Optional::keep(save_mean),
              si = Optional::keep(save_invstd), train, eps, mask] {
               auto [gi, gw, gb] = at::native_batch_norm_backward(go.cpu(), in.cpu(), Optional::give(w),
                                                                  Optional::give(rm), Optional::give(rv),
                                                                  Optional::give(sm), Optional::give(si), train, eps,
                                                                  mask);
               return std::vector<at::Tensor>{gi, gw, gb};
             });
  return {grad_input, grad_weight, grad_bias};
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  const char* name = "aten::embedding_dense_backward";
  check_on_device(grad_output.device(), indices, name);
  at::Tensor grad_weight = at::empty({num_weights, grad_output.size(-1)}, grad_output.options());
  queue_into(grad_output.device(), name, {grad_weight},
             [g = KernelTensor(grad_output), i = KernelTensor(indices), num_weights, padding_idx, scale_grad_by_freq] {
               return std::vector<at::Tensor>{
                   at::embedding_dense_backward(g.cpu(), i.cpu(), num_weights, padding_idx, scale_grad_by_freq)};
             });
  return grad_weight;
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  const char* name = "aten::mse_loss";
  check_on_device(self.device(), target, name);
  at::Tensor out = reduction == at::Reduction::None
                       ? at::empty(at::infer_size(self.sizes(), target.sizes()), self.options())
                       : at::empty({}, self.options());
  queue_into(self.device(), name, {out}, [s = KernelTensor(self), t = CarriedTensor(target), reduction] {
    return std::vector<at::Tensor>{at::mse_loss(s.cpu(), t.get(), reduction)};
  });
  return out;
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  const char* name = "aten::mse_loss_backward";
  check_on_device(self.device(), grad_output, name);
  check_on_device(self.device(), target, name);
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  queue_into(self.device(), name, {grad_input},
             [g = CarriedTensor(grad_output), s = KernelTensor(self), t = CarriedTensor(target), reduction] {
               return std::vector<at::Tensor>{at::mse_loss_backward(g.get(), s.cpu(), t.get(), reduction)};
             });
  return grad_input;
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  const char* name = "aten::nll_loss2d_forward";
  check_on_device(self.device(), target, name);
  check_argument(self.device(), weight, name);
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              self.dim());
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  at::Tensor output = reduction == at::Reduction::None
                          ? at::empty({self.size(0), self.size(2), self.size(3)}, self.options())
                          : at::empty({}, self.options());
  at::Tensor total_weight = at::empty({}, self.options());
  queue_into(self.device(), name, {output, total_weight},
             [s = KernelTensor(self), t = KernelTensor(target), w = Optional::keep(weight), reduction, ignore_index] {
               auto [out, total] = at::nll_loss2d_forward(s.cpu(), t.cpu(), Optional::give(w), reduction, ignore_index);
               return std::vector<at::Tensor>{out, total};
             });
  return {output, total_weight};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  const char* name = "aten::nll_loss2d_backward";
  for (const at::Tensor* t : {&grad_output, &target, &total_weight}) check_on_device(self.device(), *t, name);
  check_argument(self.device(), weight, name);
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  queue_into(self.device(), name, {grad_input},
             [g = CarriedTensor(grad_output), s = KernelTensor(self), t = KernelTensor(target), w = Optional::keep(weight),
              tw = CarriedTensor(total_weight), reduction, ignore_index] {
               return std::vector<at::Tensor>{at::nll_loss2d_backward(g.get(), s.cpu(), t.cpu(), Optional::give(w),
                                                                      reduction, ignore_index, tw.get())};
             });
  return grad_input;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
}

}  // namespace
}  // namespace foo::aten
