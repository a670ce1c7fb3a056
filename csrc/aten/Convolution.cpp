// Convolutions on foo. at::convolution sends backends other than CPU and
// CUDA to convolution_overrideable (and its backward); here they run ATen's
// CPU convolution on the stream.
#include "aten/Convolution.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "aten/KernelChecks.h"
#include "aten/Structured.h"

namespace foo::aten {
namespace {

// The output size of a (transposed) convolution, as ATen computes it.
std::vector<int64_t> output_size(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                                 at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                 at::IntArrayRef output_padding, int64_t groups) {
  std::vector<int64_t> size{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) {
    int64_t i = d - 2;
    int64_t kernel = dilation[i] * (weight.size(d) - 1) + 1;
    size.push_back(transposed ? (input.size(d) - 1) * stride[i] - 2 * padding[i] + kernel + output_padding[i]
                              : (input.size(d) + 2 * padding[i] - kernel) / stride[i] + 1);
    TORCH_CHECK(size.back() > 0, "Calculated output size ", size, " is too small for input ", input.sizes(),
                " and weight ", weight.sizes());
  }
  return size;
}

// A tensor of `like`'s sizes and options in `format`.
at::Tensor empty_in(const at::Tensor& like, c10::MemoryFormat format) {
  return at::empty(like.sizes(), like.options().memory_format(format));
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  const char* name = "aten::convolution_overrideable";
  c10::Device device = input.device();
  check_same_device(device, weight, name);
  if (bias.has_value()) check_same_device(device, *bias, name);
  check_convolution_dtypes(input, weight, bias);
  at::ScalarType dtype = input.scalar_type();
  check_cuda_has_kernel(name, dtype);
  at::Tensor out = at::empty(output_size(input, weight, stride, padding, dilation, transposed, output_padding, groups),
                             input.options().memory_format(convolution_memory_format(input, weight)));
  // complex32, which CUDA convolves and CPU does not, is computed in complex64.
  at::ScalarType compute = wider_compute_dtype(name, dtype).value_or(dtype);
  launch_into(device, name, {out},
             [in = TensorInfo(input), w = TensorInfo(weight), b = KernelArgument<const std::optional<at::Tensor>&>::pack(bias),
              stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(), transposed,
              output_padding = output_padding.vec(), groups, dtype, compute] {
               std::optional<at::Tensor> bias = KernelArgument<const std::optional<at::Tensor>&>::unpack(b);
               if (bias) bias = widened(*bias, dtype, compute);
               return std::vector<at::Tensor>{at::convolution(widened(in.cpu(), dtype, compute),
                                                              widened(w.cpu(), dtype, compute), bias, stride, padding,
                                                              dilation, transposed, output_padding, groups)};
             });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  const char* name = "aten::convolution_backward_overrideable";
  c10::Device device = grad_output.device();
  check_same_device(device, input, name);
  check_same_device(device, weight, name);
  const c10::MemoryFormat format = convolution_memory_format(input, weight);
  at::Tensor grad_input = output_mask[0] ? empty_in(input, format) : at::Tensor();
  at::Tensor grad_weight = output_mask[1] ? empty_in(weight, format) : at::Tensor();
  int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  at::Tensor grad_bias = output_mask[2] ? at::empty({channels}, weight.options()) : at::Tensor();
  launch_into(device, name, {grad_input, grad_weight, grad_bias},
             [go = TensorInfo(grad_output), in = TensorInfo(input), w = TensorInfo(weight), stride = stride.vec(),
              padding = padding.vec(), dilation = dilation.vec(), transposed, output_padding = output_padding.vec(),
              groups, output_mask, channels] {
               auto [gi, gw, gb] =
                   at::convolution_backward(go.cpu(), in.cpu(), w.cpu(), std::vector<int64_t>{channels}, stride,
                                            padding, dilation, transposed, output_padding, groups, output_mask);
               return std::vector<at::Tensor>{gi, gw, gb};
             });
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

c10::MemoryFormat convolution_memory_format(const at::Tensor& input, const at::Tensor& weight) {
  if (input.scalar_type() == at::kDouble || weight.scalar_type() == at::kDouble) return c10::MemoryFormat::Contiguous;
  const auto channels_last = weight.dim() == 5 ? c10::MemoryFormat::ChannelsLast3d
                             : weight.dim() == 4 ? c10::MemoryFormat::ChannelsLast
                                                 : c10::MemoryFormat::Contiguous;
  if (channels_last == c10::MemoryFormat::Contiguous) return channels_last;
  return input.suggest_memory_format() == channels_last || weight.suggest_memory_format() == channels_last
             ? channels_last
             : c10::MemoryFormat::Contiguous;
}

namespace {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace
}  // namespace foo::aten
