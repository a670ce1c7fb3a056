// Nested tensors of the strided layout (torch.nested.nested_tensor) on foo:
// ATen's NestedTensorImpl over a foo buffer, with foo's nested dispatch key.
//
// The kernels CPU and CUDA share are written with dense operators on the
// buffer and the host-side size metadata, so on foo they run as foo's dense
// kernels do, queued on the stream (generated/NestedOps.cpp). Here, those
// CPU and CUDA each run with a kernel of their own, where CUDA's is a fused
// kernel and CPU's is written with other operators: foo takes CPU's.
// Operators with a nested kernel on CPU only (sum, pinning) have none on
// foo, as on CUDA: they raise NotImplementedError.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_nested_from_padded_native.h>
#include <ATen/ops/_nested_tensor_from_mask_native.h>
#include <ATen/ops/_nested_tensor_softmax_with_shape_native.h>
#include <ATen/ops/_transform_bias_rescale_qkv.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/to_padded_tensor_native.h>

namespace foo::aten {
namespace {

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
  m.impl("to_padded_tensor", TORCH_FN(at::native::NestedTensor_to_padded_tensor_generic));
  m.impl("_native_multi_head_attention", TORCH_FN(at::native::native_multi_head_attention_cpu));
  m.impl("bmm", TORCH_FN(at::native::bmm_nested));
  m.impl("_nested_tensor_softmax_with_shape", TORCH_FN(at::native::NestedTensor_softmax_dropout));
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(transform_bias_rescale_qkv_nested));
}

// Dense-keyed operators that make a nested tensor (the padded batch and
// mask nn.TransformerEncoder turns into one): CPU's and CUDA's shared
// kernel, and CPU's for _nested_from_padded, where CUDA has a fused one.
// The fallback cannot serve them: its results are dense foo tensors.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_tensor_from_mask", TORCH_FN(at::native::NestedTensor_nested_tensor_from_mask));
  m.impl("_nested_from_padded", TORCH_FN(at::native::nested_from_padded_generic));
}

}  // namespace
}  // namespace foo::aten
