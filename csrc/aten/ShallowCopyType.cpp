// Whether `self.data = from` may swap a tensor's contents in place.
// Module._apply asks this before `.data = moved`: answering yes for CPU and
// foo dense tensors, as TensorImpl answers for CPU and CUDA, keeps every
// Parameter object, and so every weight tie, through `model.to("foo")`.
// TensorImpl's own rule lists the in-tree dense backends only, and leaves
// PrivateUse1 backends to override this operator.
#include <torch/library.h>

namespace foo::aten {
namespace {

bool dense_cpu_or_foo(const at::Tensor& t) {
  return t.layout() == at::kStrided && (t.is_cpu() || t.device().is_privateuseone());
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (dense_cpu_or_foo(self) && dense_cpu_or_foo(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

}  // namespace
}  // namespace foo::aten
