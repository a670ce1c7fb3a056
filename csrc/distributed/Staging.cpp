#include "distributed/Staging.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>

#include "aten_runtime/FooHostAllocator.h"

namespace foo::distributed {

at::Tensor pinned_like(const at::Tensor& like) {
  return at::detail::empty_strided_generic(like.sizes(), like.strides(), getFooHostAllocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::CPU), like.scalar_type());
}

at::Tensor pinned_flat(int64_t numel, at::ScalarType dtype) {
  return at::detail::empty_generic({numel}, getFooHostAllocator(), c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                   std::nullopt);
}

void release_after(const std::vector<at::Tensor>& buffers, const FooStream& stream) {
  for (const at::Tensor& b : buffers) {
    if (b.storage().nbytes() == 0) continue;
    getFooHostAllocator()->record_event(b.storage().mutable_data(), b.storage().data_ptr().get_context(),
                                        stream.unwrap());
  }
}

HostView::HostView(const at::Tensor& t)
    : data(t.data_ptr()), sizes(t.sizes().vec()), strides(t.strides().vec()), dtype(t.scalar_type()) {}

size_t HostView::bytes() const {
  int64_t last = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    last += (sizes[i] - 1) * strides[i];  // dense buffers: strides are not negative
  }
  return static_cast<size_t>(last + 1) * c10::elementSize(dtype);
}

at::Tensor HostView::tensor() const {
  return at::from_blob(data, sizes, strides, at::TensorOptions().dtype(dtype).device(c10::kCPU));
}

}  // namespace foo::distributed
