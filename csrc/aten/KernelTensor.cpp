#include "aten/KernelTensor.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>

namespace foo::aten {
namespace {

at::Tensor alias(void* data, c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype) {
  auto options = at::TensorOptions().dtype(dtype).device(c10::kCPU);
  if (data == nullptr) return at::empty_strided(sizes, strides, options);  // no elements
  return at::from_blob(data, sizes, strides, options);
}

}  // namespace

KernelTensor::KernelTensor(const at::Tensor& t)
    : data_(t.numel() == 0 ? nullptr : t.data_ptr()),
      sizes_(t.sizes().begin(), t.sizes().end()),
      strides_(t.strides().begin(), t.strides().end()),
      dtype_(t.scalar_type()) {}

at::Tensor KernelTensor::cpu() const { return alias(data_, sizes_, strides_, dtype_); }

at::Tensor cpu_alias(const at::Tensor& t) {
  return alias(t.numel() == 0 ? nullptr : t.data_ptr(), t.sizes(), t.strides(), t.scalar_type());
}

}  // namespace foo::aten
