#include "aten/KernelTensor.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/EmptyTensor.h>

namespace foo::aten {
namespace {

// A non-owning CPU tensor over `data`. Built directly rather than with
// at::from_blob: this runs once per tensor argument of every kernel.
at::Tensor raw_alias(void* data, c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype) {
  if (data == nullptr) {  // no elements
    return at::empty_strided(sizes, strides, at::TensorOptions().dtype(dtype).device(c10::kCPU));
  }
  auto meta = c10::scalarTypeToTypeMeta(dtype);
  size_t nbytes = at::detail::computeStorageNbytes(sizes, strides, meta.itemsize());
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, c10::DataPtr(data, c10::Device(c10::kCPU)),
                       /*allocator=*/nullptr, /*resizable=*/false);
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                    meta);
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return t;
}

at::Tensor alias(void* data, c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, bool conj,
                 bool neg) {
  at::Tensor t = raw_alias(data, sizes, strides, dtype);
  if (conj) t._set_conj(true);
  if (neg) t._set_neg(true);
  return t;
}

}  // namespace

KernelTensor::KernelTensor(const at::Tensor& t)
    : data_(t.numel() == 0 ? nullptr : t.data_ptr()),
      sizes_(t.sizes().begin(), t.sizes().end()),
      strides_(t.strides().begin(), t.strides().end()),
      dtype_(t.scalar_type()),
      conj_(t.is_conj()),
      neg_(t.is_neg()) {}

at::Tensor KernelTensor::cpu() const { return alias(data_, sizes_, strides_, dtype_, conj_, neg_); }

at::Tensor cpu_alias(const at::Tensor& t) {
  return alias(t.numel() == 0 ? nullptr : t.data_ptr(), t.sizes(), t.strides(), t.scalar_type(), t.is_conj(),
               t.is_neg());
}

}  // namespace foo::aten
