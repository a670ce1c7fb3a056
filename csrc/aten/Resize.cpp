// resize_ and the set_ family: metadata changes that may grow the storage.
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "runtime/FooStorage.h"

namespace foo::aten {
namespace {

// Gives `self` the sizes (and strides, or contiguous ones) and grows its
// storage when the new layout reaches past the end.
void set_layout(at::Tensor& self, c10::IntArrayRef size, at::OptionalIntArrayRef stride) {
  for (auto s : size) TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  auto* impl = self.unsafeGetTensorImpl();
  if (stride.has_value()) {
    // Checked as given (negative strides raise, as on CPU and CUDA), before
    // set_sizes_and_strides would quietly make them contiguous.
    (void)at::detail::computeStorageNbytes(size, *stride, self.dtype().itemsize(), impl->storage_offset());
    impl->set_sizes_and_strides(size, *stride);
  } else {
    impl->set_sizes_contiguous(size);
  }
  size_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.dtype().itemsize(),
                                                   impl->storage_offset());
  const auto& storage = impl->unsafe_storage();
  if (needed > storage.nbytes()) {
    c10::DeviceGuard guard(self.device());
    resize_bytes(storage.unsafeGetStorageImpl(), needed);
  }
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  at::Tensor t = self;
  // Same sizes: the layout stays as it is (an expanded tensor keeps its zero
  // strides, so the overlap checks after a resize_ still see them), as on CPU.
  if (t.sizes() != size) set_layout(t, size, std::nullopt);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format ", *memory_format);
    t.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
    set_layout(t, size, t.strides());
  }
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  set_layout(self, size, stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) {
  int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage_offset(self, std::move(source), 0, {numel}, {});
}

// set_(): an empty tensor with storage of its own, as CPU's and CUDA's.
at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());  // the empty storage's device is the current one
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, c10::GetAllocator(self.device().type()), /*resizable=*/true);
  return set_storage_offset(self, std::move(storage), 0, {0}, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage_offset(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
}

}  // namespace
}  // namespace foo::aten
