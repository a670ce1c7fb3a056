// cat, which the Structured template does not fit (its first argument is a
// list): its meta class sizes the output on the host, ATen's CPU out=
// kernel writes straight into it on the stream.
#include <ATen/ops/cat_cpu_dispatch.h>
#include <ATen/ops/cat_meta.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

using TensorList = KernelArgument<const at::ITensorListRef&>;

void queue_cat(const at::Tensor& out, const at::ITensorListRef& tensors, int64_t dim) {
  const char* name = "aten::cat";
  for (const at::Tensor& t : tensors) check_same_device(out.device(), t, name);
  if (out.numel() == 0) return;
  launch_op(out.device().index(), name, [o = TensorInfo(out), packed = TensorList::pack(tensors), dim] {
    at::Tensor dst = o.cpu();
    at::cpu::cat_out(dst, TensorList::unpack(packed), dim);
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

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
}

}  // namespace
}  // namespace foo::aten
