// index_select and embedding_dense_backward: the heart of nn.Embedding,
// forward and backward (index_select is not structured).
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select_cpu_dispatch.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  const char* name = "aten::index_select";
  check_same_device(self.device(), index, name);
  check_same_device(self.device(), out, name);
  TORCH_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar type");
  // Before the resize, as CPU and CUDA make them: a resized out= tensor may
  // no longer overlap what it did.
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> size = self.sizes().vec();
  if (self.dim() > 0) size[dim] = index.numel();
  at::native::resize_output(out, size);
  if (out.numel() == 0) return out;
  // Index values are checked by the kernel: an error surfaces at the next sync.
  launch_op(self.device().index(), name,
            [o = TensorInfo(out), s = TensorInfo(self), i = TensorInfo(index), dim] {
              at::Tensor dst = o.cpu();
              at::cpu::index_select_out(dst, s.cpu(), dim, i.cpu());
            });
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  const char* name = "aten::embedding_dense_backward";
  check_same_device(grad_output.device(), indices, name);
  at::Tensor grad_weight = at::empty({num_weights, grad_output.size(-1)}, grad_output.options());
  launch_into(grad_output.device(), name, {grad_weight},
             [g = TensorInfo(grad_output), i = TensorInfo(indices), num_weights, padding_idx, scale_grad_by_freq] {
               return std::vector<at::Tensor>{
                   at::embedding_dense_backward(g.cpu(), i.cpu(), num_weights, padding_idx, scale_grad_by_freq)};
             });
  return grad_weight;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
}

}  // namespace
}  // namespace foo::aten
