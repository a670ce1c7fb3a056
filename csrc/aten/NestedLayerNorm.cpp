// Layer norm of a nested tensor on foo, forward and backward.
//
// CPU and CUDA share one nested kernel, which calls ATen's layer-norm
// DispatchStub for the buffer's device type. foo registers no DispatchStub
// kernels (its kernels run on the stream, not at the call), so that kernel
// would fail on foo. The rows of a contiguous nested tensor whose last
// dimensions are the normalized ones are the rows of its buffer seen as
// (rows, normalized numel): foo runs the dense layer norm on that view,
// queued like any foo operator.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/NestedTensorImpl.h>
#include <ATen/native/nested/NestedTensorUtils.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>

#include <array>
#include <optional>
#include <tuple>

namespace foo::aten {
namespace {

// The buffer's rows and row length; raises CPU's errors for arguments its
// nested kernel refuses.
std::pair<int64_t, int64_t> nested_rows(const at::native::NestedTensorImpl& input, at::IntArrayRef normalized_shape,
                                        const at::Tensor& weight, const at::Tensor& bias) {
  const auto ndim = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(ndim >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., ",
              "containing at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!weight.defined() || weight.sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got ", "weight of shape ", weight.sizes(),
              " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!bias.defined() || bias.sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got ", "bias of shape ", bias.sizes(),
              " and normalized_shape = ", normalized_shape);
  int64_t row = 1;
  for (int64_t i = 0; i < ndim; ++i) {
    std::optional<int64_t> size = input.opt_size(input.dim() - ndim + i);
    TORCH_CHECK(size.has_value(), "normalized_shape extends into irregular dimensions for the nested tensor");
    TORCH_CHECK(*size == normalized_shape[i], "The shape at dimension ", i,
                "of normalized_shape doesn't match the input");
    row *= *size;
  }
  return {row == 0 ? 0 : input.numel() / row, row};
}

const at::native::NestedTensorImpl& contiguous_nested(const at::Tensor& t) {
  using at::native::nested_tensor_impl_is_contiguous;
  const auto* nt_input = at::native::get_nested_tensor_impl(t);
  TORCH_CHECK(nested_tensor_impl_is_contiguous(nt_input));
  return *nt_input;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps) {
  const c10::OptionalDeviceGuard guard(at::device_of(input));
  TORCH_CHECK_VALUE(weight && bias, "NestedTensor layer_norm requires weight and bias");
  TORCH_CHECK(!weight->is_nested(), "NestedTensor weight not supported for layer_norm");
  TORCH_CHECK(!bias->is_nested(), "NestedTensor bias not supported for layer_norm");
  const auto& nt = contiguous_nested(input);
  auto [rows, row] = nested_rows(nt, normalized_shape, *weight, *bias);
  const at::Tensor buffer = nt.get_buffer();
  auto [out, mean, rstd] = at::native_layer_norm(buffer.view({rows, row}), {row}, weight->reshape({row}),
                                                 bias->reshape({row}), eps);
  return {at::native::wrap_buffer(out.view({-1}), nt.get_nested_sizes()), mean.view({rows}), rstd.view({rows})};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm_backward(
    const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask) {
  const c10::OptionalDeviceGuard guard(at::device_of(input));
  const auto& nt = contiguous_nested(input);
  const auto& nt_grad = contiguous_nested(grad);
  const at::Tensor w = weight.value_or(at::Tensor());
  const at::Tensor b = bias.value_or(at::Tensor());
  auto [rows, row] = nested_rows(nt, normalized_shape, w, b);
  auto [d_input, d_weight, d_bias] = at::native_layer_norm_backward(
      nt_grad.get_buffer().view({rows, row}), nt.get_buffer().view({rows, row}), {row}, mean.view({rows, 1}),
      rstd.view({rows, 1}), w.defined() ? std::optional<at::Tensor>(w.reshape({row})) : std::nullopt,
      b.defined() ? std::optional<at::Tensor>(b.reshape({row})) : std::nullopt, output_mask);
  return {d_input.defined() ? at::native::wrap_buffer(d_input.view({-1}), nt_grad.get_nested_sizes()) : d_input,
          d_weight.defined() ? d_weight.view(normalized_shape) : d_weight,
          d_bias.defined() ? d_bias.view(normalized_shape) : d_bias};
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(nested_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(nested_layer_norm_backward));
}

}  // namespace
}  // namespace foo::aten
