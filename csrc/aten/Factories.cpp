// empty.memory_format and empty_strided: foo tensors from the caching
// allocator, for the dispatcher and (EmptyFoo.h) for operators' outputs.
#include "aten/EmptyFoo.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "runtime/FooCachingAllocator.h"

namespace foo::aten {
namespace {

constexpr c10::DispatchKeySet kFooKeys(c10::DispatchKey::PrivateUse1);

// A device without an index means the current one: no switch, and no
// switching back, on the allocation path.
std::optional<c10::Device> device_to_switch_to(std::optional<c10::Device> device) {
  return device && device->has_index() ? device : std::nullopt;
}

void check_dense(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided, "foo tensors must be strided, not ", *layout);
}

at::Tensor allocate(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Device> device,
                    std::optional<c10::MemoryFormat> memory_format) {
  c10::OptionalDeviceGuard guard(device_to_switch_to(device));
  return at::detail::empty_generic(size, getFooDeviceAllocator(), kFooKeys,
                                   dtype.value_or(c10::get_default_dtype_as_scalartype()), memory_format);
}

at::Tensor allocate_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                            std::optional<c10::Device> device) {
  c10::OptionalDeviceGuard guard(device_to_switch_to(device));
  return at::detail::empty_strided_generic(size, stride, getFooDeviceAllocator(), kFooKeys,
                                           dtype.value_or(c10::get_default_dtype_as_scalartype()));
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  check_dense(layout, pin_memory);
  return allocate(size, dtype, device, memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  check_dense(layout, pin_memory);
  return allocate_strided(size, stride, dtype, device);
}

}  // namespace

at::Tensor empty_foo(c10::IntArrayRef size, const c10::TensorOptions& options,
                     std::optional<c10::MemoryFormat> memory_format) {
  check_dense(options.layout_opt(), options.pinned_memory_opt());
  return allocate(size, c10::optTypeMetaToScalarType(options.dtype_opt()), options.device_opt(),
                  memory_format ? memory_format : options.memory_format_opt());
}

at::Tensor empty_strided_foo(c10::IntArrayRef size, c10::IntArrayRef stride, const c10::TensorOptions& options) {
  check_dense(options.layout_opt(), options.pinned_memory_opt());
  return allocate_strided(size, stride, c10::optTypeMetaToScalarType(options.dtype_opt()), options.device_opt());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
}

}  // namespace foo::aten
