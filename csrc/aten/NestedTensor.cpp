// Nested tensors of the strided layout (torch.nested.nested_tensor) on foo:
// ATen's NestedTensorImpl over a foo buffer, with foo's nested dispatch key.
//
// Most kernels CPU and CUDA share are written with dense operators on the
// buffer and the host-side size metadata, so on foo they run as foo's dense
// kernels do, queued on the stream (generated/NestedOps.cpp); layer norm is
// the exception (NestedLayerNorm.cpp). Here, the operators CPU and CUDA each
// run with a kernel of their own, where CUDA's is a fused kernel and CPU's
// is written with other operators: foo takes CPU's. _nested_from_padded,
// the way back from a padded batch, is NestedFromPadded.cpp. Operators with
// a nested kernel on CPU only (sum, pinning) have none on foo, as on CUDA:
// they raise NotImplementedError at the call.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_nested_tensor_softmax_with_shape_native.h>
#include <ATen/ops/_transform_bias_rescale_qkv.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/to_padded_tensor_native.h>

#include <utility>

namespace foo::aten {
namespace {

// A kernel run under the device guard CUDA's generated wrapper sets: the
// device of its first argument.
template <auto Kernel, class = decltype(Kernel)>
struct OnItsDevice;

template <auto Kernel, class R, class... Rest>
struct OnItsDevice<Kernel, R (*)(const at::Tensor&, Rest...)> {
  static R call(const at::Tensor& first, Rest... rest) {
    const c10::OptionalDeviceGuard guard(at::device_of(first));
    return Kernel(first, std::forward<Rest>(rest)...);
  }
};

// CPU's kernel pads a nested input and reads the padded data on the host;
// foo pads it the same way and runs the dense operator, queued like any foo
// operator.
std::tuple<at::Tensor, at::Tensor, at::Tensor> transform_bias_rescale_qkv_nested(const at::Tensor& qkv,
                                                                                const at::Tensor& qkv_bias,
                                                                                int64_t num_heads) {
  const c10::OptionalDeviceGuard guard(at::device_of(qkv));
  return at::_transform_bias_rescale_qkv(qkv.to_padded_tensor(0), qkv_bias, num_heads);
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("to_padded_tensor", TORCH_FN(OnItsDevice<&at::native::NestedTensor_to_padded_tensor_generic>::call));
  m.impl("_native_multi_head_attention", TORCH_FN(OnItsDevice<&at::native::native_multi_head_attention_cpu>::call));
  m.impl("bmm", TORCH_FN(OnItsDevice<&at::native::bmm_nested>::call));
  m.impl("_nested_tensor_softmax_with_shape", TORCH_FN(OnItsDevice<&at::native::NestedTensor_softmax_dropout>::call));
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(transform_bias_rescale_qkv_nested));
}

}  // namespace
}  // namespace foo::aten
