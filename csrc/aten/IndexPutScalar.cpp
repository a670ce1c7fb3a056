// The number in `x[mask] = number` (Python indexing, at::indexing::set_item)
// reaches index_put_ as it does on CUDA.
//
// PyTorch's indexing makes the number a CPU scalar tensor when x is on CUDA
// and a tensor on x's device otherwise (at::scalar_tensor). index_put_'s host
// code, shared by CPU and CUDA, hands a CPU scalar with a single boolean or
// uint8 mask to masked_fill_: on CUDA `x[x < 0] = 0` is one kernel that does
// not wait for the device, and `x[uint8_mask] = 0` raises at the call because
// masked_fill_ refuses uint8 masks. A value already on the device takes the
// index_put_ path instead (the mask becomes indices through nonzero, which
// waits; a uint8 mask is only deprecated). So foo's scalar_tensor remembers
// the tensor it made last on each thread and the number in it, and
// index_put_ given that very tensor with masks for indices passes the CPU
// scalar CUDA's indexing would have made. Any other value, a tensor the user
// made on foo among them, takes the path it takes on CUDA.
#include <optional>

#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/index_put_native.h>
#include <ATen/ops/scalar_tensor_native.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/library.h>

#include "aten/MaskIndices.h"

namespace foo::aten {
namespace {

using IndexList = c10::List<std::optional<at::Tensor>>;
using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct MadeScalar {
  WeakImpl tensor;  // weak: a freed tensor's address may be reused
  at::Scalar number;
};

// Per thread: the indexing code makes the value and calls index_put_ on the
// calling thread, with no other scalar_tensor in between.
thread_local std::optional<MadeScalar> last_made;

at::Tensor scalar_tensor(const at::Scalar& s, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  at::Tensor made = at::native::scalar_tensor(s, dtype, layout, device, pin_memory);
  last_made = MadeScalar{WeakImpl(made.getIntrusivePtr()), s};
  return made;
}

std::optional<at::Scalar> number_made_as(const at::Tensor& value) {
  if (!last_made || last_made->tensor.lock().get() != value.unsafeGetTensorImpl()) return std::nullopt;
  return last_made->number;
}

at::Tensor& index_put_(at::Tensor& self, const IndexList& indices, const at::Tensor& values, bool accumulate) {
  // Only a mask can take masked_fill_'s path; with any other index CUDA
  // copies the CPU scalar to the device, which the foo value already is.
  if (!accumulate && masks_only(indices)) {
    if (std::optional<at::Scalar> number = number_made_as(values)) {
      const at::Tensor on_cpu = at::detail::scalar_tensor_static(*number, values.scalar_type(), at::kCPU);
      return at::native::index_put_(self, indices, on_cpu, accumulate);
    }
  }
  return at::native::index_put_(self, indices, values, accumulate);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("scalar_tensor", TORCH_FN(scalar_tensor));
  m.impl("index_put_", TORCH_FN(index_put_));
}

}  // namespace
}  // namespace foo::aten
