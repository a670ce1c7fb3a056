// max_pool2d_with_indices: two outputs, which the Structured template does
// not fit; its meta class sizes both on the host.
#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  check_cuda_has_kernel("aten::max_pool2d_with_indices", self.scalar_type());
  AllocatingMeta<at::meta::structured_max_pool2d_with_indices, 2> op;
  op.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  auto& [out, indices] = op.outputs;
  if (out.numel() > 0) {
    launch_op(self.device().index(), "aten::max_pool2d_with_indices",
              [o = TensorInfo(out), i = TensorInfo(indices), s = TensorInfo(self), k = kernel_size.vec(),
               st = stride.vec(), p = padding.vec(), d = dilation.vec(), ceil_mode] {
                at::Tensor dst = o.cpu();
                at::Tensor idx = i.cpu();
                at::cpu::max_pool2d_with_indices_out(dst, idx, s.cpu(), k, st, p, d, ceil_mode);
              });
  }
  return {out, indices};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
}

}  // namespace
}  // namespace foo::aten
