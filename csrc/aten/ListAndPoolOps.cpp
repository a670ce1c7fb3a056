// Native kernels for operators the Structured template does not fit: cat
// (its first argument is a list), max_pool2d_with_indices (two outputs) and
// index_select (not structured; the heart of nn.Embedding).
#include <ATen/ops/cat_cpu_dispatch.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select_cpu_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

using TensorList = Carry<const at::ITensorListRef&>;

void queue_cat(const at::Tensor& out, const at::ITensorListRef& tensors, int64_t dim) {
  const char* name = "aten::cat";
  for (const at::Tensor& t : tensors) check_on_device(out.device(), t, name);
  if (out.numel() == 0) return;
  launch_op(out.device().index(), name, [o = KernelTensor(out), kept = TensorList::keep(tensors), dim] {
    at::Tensor dst = o.cpu();
    at::cpu::cat_out(dst, TensorList::give(kept), dim);
  });
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  AllocatingMeta<at::meta::structured_cat> op;
  op.meta(tensors, dim);
  queue_cat(op.outputs[0], tensors, dim);
  return std::move(op.outputs[0]);
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  ProvidedMeta<at::meta::structured_cat> op(out, /*inplace=*/false);
  op.meta(tensors, dim);
  queue_cat(out, tensors, dim);
  return out;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  AllocatingMeta<at::meta::structured_max_pool2d_with_indices, 2> op;
  op.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  auto& [out, indices] = op.outputs;
  if (out.numel() > 0) {
    launch_op(self.device().index(), "aten::max_pool2d_with_indices",
              [o = KernelTensor(out), i = KernelTensor(indices), s = KernelTensor(self), k = kernel_size.vec(),
               st = stride.vec(), p = padding.vec(), d = dilation.vec(), ceil_mode] {
                at::Tensor dst = o.cpu();
                at::Tensor idx = i.cpu();
                at::cpu::max_pool2d_with_indices_out(dst, idx, s.cpu(), k, st, p, d, ceil_mode);
              });
  }
  return {out, indices};
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const char* name = "aten::index_select";
  check_on_device(self.device(), index, name);
  TORCH_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> size = self.sizes().vec();
  if (self.dim() > 0) size[dim] = index.numel();
  at::Tensor out = at::empty(size, self.options());
  if (out.numel() == 0) return out;
  // Index values are checked by the kernel: an error surfaces at the next sync.
  launch_op(self.device().index(), name,
            [o = KernelTensor(out), s = KernelTensor(self), i = CarriedTensor(index), dim] {
              at::Tensor dst = o.cpu();
              at::cpu::index_select_out(dst, s.cpu(), dim, i.get());
            });
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
  m.impl("index_select", TORCH_FN(index_select));
}

}  // namespace
}  // namespace foo::aten
