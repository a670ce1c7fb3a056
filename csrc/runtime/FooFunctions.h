// Device management for foo, in the shape of c10/xpu/XPUFunctions.h.
// None of these initializes the runtime except device_synchronize.
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <foo_sim/foo_runtime.h>

namespace foo {

// Never throws: 0 when the runtime reports no device or is misconfigured
// (no_device_reason() says why). Cached, so it stays valid after fork.
c10::DeviceIndex device_count() noexcept;
std::string no_device_reason();

c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex device);
// Sets `device` as current and returns the previous one.
c10::DeviceIndex exchange_device(c10::DeviceIndex device);
// An index that names no device raises as CUDA's runtime refuses one
// (torch.AcceleratorError, "invalid device ordinal"), naming the index and
// the valid range.
void check_device_index(c10::DeviceIndex device);
[[noreturn]] void throw_invalid_device(int64_t device);

// Runs fn() with `device` current, then makes the previous device current
// again, also when fn throws.
template <class F>
auto on_device(c10::DeviceIndex device, F&& fn) {
  struct Restore {
    c10::DeviceIndex previous;
    ~Restore() { fooSetDevice(previous); }
  } restore{exchange_device(device)};
  return fn();
}

void device_synchronize(c10::DeviceIndex device);
fooDeviceProp get_device_properties(c10::DeviceIndex device);

}  // namespace foo
