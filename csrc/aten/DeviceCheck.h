// Which devices an operator's tensor arguments may be on, decided as CUDA
// decides it: native_functions.yaml marks each operator `device_check:
// ExactSame` (the default: CUDA's generated wrapper rejects any tensor on
// another device, CPU 0-dim tensors included) or `NoCheck` (the kernel
// decides: TensorIterator takes CPU 0-dim tensors as scalars, indexing
// takes CPU index tensors).
#pragma once

#include <string_view>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace foo::aten {

enum class DeviceCheck { ExactSame, NoCheck };

// For operators known only by name (the fallback). Generated from
// native_functions.yaml into generated/DeviceCheckTable.cpp.
bool has_exact_device_check(std::string_view op_name_and_overload);

// ExactSame: `t` is undefined or on `device`.
void check_same_device(c10::Device device, const at::Tensor& t, const char* op_name);
// NoCheck: `t` is undefined, on `device`, or a CPU 0-dim tensor (a scalar,
// which the kernel captures at launch).
void check_on_device_or_cpu_scalar(c10::Device device, const at::Tensor& t, const char* op_name);

template <DeviceCheck Check>
void check_device(c10::Device device, const at::Tensor& t, const char* op_name) {
  if constexpr (Check == DeviceCheck::ExactSame) {
    check_same_device(device, t, op_name);
  } else {
    check_on_device_or_cpu_scalar(device, t, op_name);
  }
}

}  // namespace foo::aten
