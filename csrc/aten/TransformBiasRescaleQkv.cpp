// _transform_bias_rescale_qkv on foo: the transformer fast path's split of
// a (batch, length, 3 * embed) projection into query, key and value, each
// (batch, heads, length, head dim), with the bias added and the query
// scaled.
//
// ATen has no meta function for it, so the fallback would make the host
// wait for the stream to learn the output sizes; they follow from the
// arguments' sizes, so foo sizes them at the call, as CUDA does, and runs
// CPU's kernel on the stream. Nested input is padded first
// (NestedTensor.cpp), as CPU's and CUDA's kernels do.
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ops/_transform_bias_rescale_qkv_cpu_dispatch.h>
#include <ATen/ops/empty.h>

#include <tuple>
#include <vector>

#include "aten/DeviceCheck.h"
#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> transform_bias_rescale_qkv(const at::Tensor& qkv,
                                                                         const at::Tensor& qkv_bias,
                                                                         int64_t num_heads) {
  const char* name = "aten::_transform_bias_rescale_qkv";
  const c10::OptionalDeviceGuard guard(at::device_of(qkv));
  check_same_device(qkv.device(), qkv_bias, name);
  const int64_t batch = qkv.size(0), length = qkv.size(1), three_embed = qkv.size(2);
  const int64_t embed = three_embed / 3;
  TORCH_CHECK(num_heads > 0 && embed % num_heads == 0, name, ": embed dim ", embed,
              " is not divisible by the number of heads ", num_heads);
  TORCH_CHECK(three_embed % 3 == 0, name, ": the last dimension of qkv (", three_embed, ") is not 3 * embed dim");
  // CPU's kernel reads 3 * embed bias values without checking.
  TORCH_CHECK(qkv_bias.dim() == 1 && qkv_bias.size(0) == three_embed, name, ": expected a bias of size [",
              three_embed, "], got ", qkv_bias.sizes());
  TORCH_CHECK(qkv_bias.scalar_type() == qkv.scalar_type(), name, ": qkv is ", qkv.scalar_type(), " but its bias is ",
              qkv_bias.scalar_type());
  const int64_t head_dim = embed / num_heads;
  // One tensor holds the three, as on CPU and CUDA.
  at::Tensor q_k_v = at::empty({3, batch, num_heads, length, head_dim}, qkv.options());
  std::vector<at::Tensor> parts = q_k_v.unbind(0);
  launch_into(qkv.device(), name, parts, [x = TensorInfo(qkv), b = TensorInfo(qkv_bias), num_heads] {
    auto [q, k, v] = at::cpu::_transform_bias_rescale_qkv(x.cpu(), b.cpu(), num_heads);
    return std::vector<at::Tensor>{q, k, v};
  });
  return {parts[0], parts[1], parts[2]};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(transform_bias_rescale_qkv));
}

}  // namespace
}  // namespace foo::aten
