// Batch, layer and group normalization on foo, forward and backward: ATen's
// CPU kernels on the stream.
// Not left to the fallback: their meta functions give the saved statistics
// shapes or dtypes that the CPU kernels do not produce, and later kernels
// (the backward) depend on those. Group norm is here because without a foo
// kernel the dispatcher would pick its decomposed math version, which loses
// precision in half and bfloat16 that CUDA's and CPU's kernels keep.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/AccumulateType.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/native_group_norm.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/native/layer_norm.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

using Optional = KernelArgument<const std::optional<at::Tensor>&>;

// Saved statistics as ATen's CPU kernels produce and read them: in the
// input's dtype, except float for reduced-precision input with float
// parameters.
at::ScalarType cpu_stats_dtype(const at::Tensor& input, const std::optional<at::Tensor>& weight) {
  bool mixed = at::isReducedFloatingType(input.scalar_type()) && weight.has_value() && weight->defined() &&
               weight->scalar_type() == at::kFloat;
  return mixed ? at::kFloat : input.scalar_type();
}

// Batch and layer norm save their statistics as CUDA's kernels do, in the
// accumulation type (float for half and bfloat16 input), so that code that
// reads them sees what it sees on CUDA. The kernels convert to the CPU
// kernels' dtypes and back.
at::ScalarType cuda_stats_dtype(const at::Tensor& input) {
  return at::toAccumulateType(input.scalar_type(), c10::DeviceType::CUDA);
}

std::optional<at::Tensor> as_cpu_stats(std::optional<at::Tensor> stats, at::ScalarType dtype) {
  if (stats.has_value() && stats->defined()) stats = stats->to(dtype);
  return stats;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  const char* name = "aten::native_batch_norm";
  c10::Device device = input.device();
  for (const auto* t : {&weight, &bias, &running_mean, &running_var}) check_argument<DeviceCheck::ExactSame>(device, *t, name);
  TORCH_CHECK(input.dim() >= 2, "batch_norm expects an input with at least 2 dimensions, got ", input.sizes());
  int64_t channels = input.size(1);
  // As the CPU kernel: statistics are saved only when training.
  auto stats_options = input.options().dtype(cuda_stats_dtype(input));
  at::Tensor out = at::empty_like(input, input.suggest_memory_format());
  at::Tensor save_mean = at::empty({training ? channels : 0}, stats_options);
  at::Tensor save_invstd = at::empty({training ? channels : 0}, stats_options);
  // The running statistics are updated in place by the CPU kernel.
  launch_into(device, name, {out, save_mean, save_invstd},
             [in = TensorInfo(input), w = Optional::pack(weight), b = Optional::pack(bias),
              rm = Optional::pack(running_mean), rv = Optional::pack(running_var), training, momentum, eps] {
               auto [y, mean, invstd] = at::native_batch_norm(in.cpu(), Optional::unpack(w), Optional::unpack(b),
                                                              Optional::unpack(rm), Optional::unpack(rv), training,
                                                              momentum, eps);
               return std::vector<at::Tensor>{y, mean, invstd};
             });
  return {out, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                  at::IntArrayRef normalized_shape,
                                                                  const std::optional<at::Tensor>& weight,
                                                                  const std::optional<at::Tensor>& bias, double eps) {
  const char* name = "aten::native_layer_norm";
  c10::Device device = input.device();
  check_argument<DeviceCheck::ExactSame>(device, weight, name);
  check_argument<DeviceCheck::ExactSame>(device, bias, name);
  // The checks CPU's and CUDA's host functions share (layer_norm.h).
  at::native::_check_layer_norm_inputs(input, normalized_shape, weight.value_or(at::Tensor()),
                                       bias.value_or(at::Tensor()));
  int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(input.dim(), 1);
  auto stats_options = input.options().dtype(cuda_stats_dtype(input));
  at::Tensor out = at::empty_like(input, at::MemoryFormat::Contiguous);
  at::Tensor mean = at::empty(stat_shape, stats_options);
  at::Tensor rstd = at::empty(stat_shape, stats_options);
  launch_into(device, name, {out, mean, rstd},
             [in = TensorInfo(input), shape = normalized_shape.vec(), w = Optional::pack(weight),
              b = Optional::pack(bias), eps] {
               auto [y, mu, rs] = at::native_layer_norm(in.cpu(), shape, Optional::unpack(w), Optional::unpack(b), eps);
               return std::vector<at::Tensor>{y, mu, rs};
             },
             work_of(input, weight, bias));
  return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(const at::Tensor& input,
                                                                  const std::optional<at::Tensor>& weight,
                                                                  const std::optional<at::Tensor>& bias, int64_t n,
                                                                  int64_t c, int64_t hxw, int64_t group, double eps) {
  const char* name = "aten::native_group_norm";
  c10::Device device = input.device();
  check_argument<DeviceCheck::ExactSame>(device, weight, name);
  check_argument<DeviceCheck::ExactSame>(device, bias, name);
  // The CPU kernel's own checks, made at the call rather than on the stream.
  TORCH_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, ",
              "but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == n * c * hxw, "Expected the input of group_norm to have N * C * HxW = ", n * c * hxw,
              " elements, but got ", input.numel());
  for (const auto* p : {&weight, &bias}) {
    TORCH_CHECK(!p->has_value() || !(*p)->defined() || ((*p)->dim() == 1 && (*p)->numel() == c),
                "Expected weight and bias to be a vector of size equal to the number of channels in input (", c,
                "), but got ", (*p)->sizes());
  }
  auto stats_options = input.options().dtype(cpu_stats_dtype(input, weight));
  at::Tensor out = at::empty_like(input, input.suggest_memory_format());
  at::Tensor mean = at::empty({n, group}, stats_options);
  at::Tensor rstd = at::empty({n, group}, stats_options);
  launch_into(device, name, {out, mean, rstd},
             [in = TensorInfo(input), w = Optional::pack(weight), b = Optional::pack(bias), n, c, hxw, group, eps] {
               auto [y, mu, rs] =
                   at::native_group_norm(in.cpu(), Optional::unpack(w), Optional::unpack(b), n, c, hxw, group, eps);
               return std::vector<at::Tensor>{y, mu, rs};
             });
  return {out, mean, rstd};
}

// The functionalization-friendly spellings of the same computation.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(const at::Tensor& input,
                                                                const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(const at::Tensor& input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask) {
  const char* name = "aten::native_layer_norm_backward";
  c10::Device device = grad_out.device();
  for (const at::Tensor* t : {&input, &mean, &rstd}) check_same_device(device, *t, name);
  check_argument<DeviceCheck::ExactSame>(device, weight, name);
  check_argument<DeviceCheck::ExactSame>(device, bias, name);
  auto maybe = [](bool wanted, const std::optional<at::Tensor>& like) {
    return wanted && like.has_value() && like->defined() ? at::empty_like(*like, at::MemoryFormat::Contiguous)
                                                         : at::Tensor();
  };
  at::Tensor grad_input = output_mask[0] ? at::empty_like(input, at::MemoryFormat::Contiguous) : at::Tensor();
  at::Tensor grad_weight = maybe(output_mask[1], weight);
  at::Tensor grad_bias = maybe(output_mask[2], bias);
  at::ScalarType stats = cpu_stats_dtype(input, weight);
  launch_into(device, name, {grad_input, grad_weight, grad_bias},
             [go = TensorInfo(grad_out), in = TensorInfo(input), m = TensorInfo(mean), r = TensorInfo(rstd),
              w = Optional::pack(weight), b = Optional::pack(bias), shape = normalized_shape.vec(), output_mask,
              stats] {
               auto [di, dw, db] = at::native_layer_norm_backward(go.cpu(), in.cpu(), shape, m.cpu().to(stats),
                                                                  r.cpu().to(stats), Optional::unpack(w),
                                                                  Optional::unpack(b), output_mask);
               return std::vector<at::Tensor>{di, dw, db};
             },
             work_of(grad_out, input, mean, rstd, weight, bias));
  return {grad_input, grad_weight, grad_bias};
}

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
  check_same_device(device, input, name);
  for (const auto* t : {&weight, &running_mean, &running_var, &save_mean, &save_invstd}) check_argument<DeviceCheck::ExactSame>(device, *t, name);
  auto param_options = weight.has_value() && weight->defined() ? weight->options() : input.options();
  at::Tensor grad_input = mask[0] ? at::empty_like(input, input.suggest_memory_format()) : at::Tensor();
  at::Tensor grad_weight = empty_if(mask[1], {input.size(1)}, param_options);
  at::Tensor grad_bias = empty_if(mask[2], {input.size(1)}, param_options);
  at::ScalarType stats = cpu_stats_dtype(input, weight);
  launch_into(device, name, {grad_input, grad_weight, grad_bias},
             [go = TensorInfo(grad_out), in = TensorInfo(input), w = Optional::pack(weight),
              rm = Optional::pack(running_mean), rv = Optional::pack(running_var), sm = Optional::pack(save_mean),
              si = Optional::pack(save_invstd), train, eps, mask, stats] {
               auto [gi, gw, gb] = at::native_batch_norm_backward(
                   go.cpu(), in.cpu(), Optional::unpack(w), Optional::unpack(rm), Optional::unpack(rv),
                   as_cpu_stats(Optional::unpack(sm), stats), as_cpu_stats(Optional::unpack(si), stats), train, eps,
                   mask);
               return std::vector<at::Tensor>{gi, gw, gb};
             });
  return {grad_input, grad_weight, grad_bias};
}

// The backward of _batch_norm_with_update and friends: the same kernel, as
// CUDA's is (the reserve is cuDNN's and empty here).
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_with_reserve(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  std::optional<at::Tensor> w = weight.defined() ? std::optional<at::Tensor>(weight) : std::nullopt;
  return batch_norm_backward(grad_out, input, w, running_mean, running_var, save_mean, save_var, update, eps,
                             output_mask);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward_with_reserve));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("_native_batch_norm_legit", TORCH_FN(batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batch_norm_legit_no_stats));
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_group_norm", TORCH_FN(native_group_norm));
}

}  // namespace
}  // namespace foo::aten
