#include "runtime/FooFunctions.h"

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooInit.h"
#include "runtime/FooKernelWarnings.h"

namespace foo {
namespace {

struct DeviceCountResult {
  c10::DeviceIndex count = 0;
  std::string reason;
};

const DeviceCountResult& device_count_result() noexcept {
  static const DeviceCountResult result = [] {
    DeviceCountResult r;
    int n = 0;
    fooError_t e = fooGetDeviceCount(&n);
    if (e == fooSuccess) {
      r.count = static_cast<c10::DeviceIndex>(n);
    } else {
      r.reason = fooGetErrorDetail();
      if (r.reason.empty()) r.reason = fooGetErrorString(e);
    }
    return r;
  }();
  return result;
}

}  // namespace

c10::DeviceIndex device_count() noexcept { return device_count_result().count; }

std::string no_device_reason() { return device_count_result().reason; }

void throw_invalid_device(int64_t device) {
  const int count = device_count();
  throw c10::AcceleratorError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, fooErrorInvalidDevice,
                              c10::str("foo error: ", fooGetErrorString(fooErrorInvalidDevice),
                                       ". The device index is out of range: ", device, " (valid indices are 0 to ",
                                       count - 1, ", ", count, " foo devices)"));
}

void check_device_index(c10::DeviceIndex device) {
  auto count = device_count();
  TORCH_CHECK(count > 0, "Found no foo devices: ", no_device_reason());
  if (device < 0 || device >= count) throw_invalid_device(device);
}

c10::DeviceIndex current_device() {
  int device = 0;
  FOO_CHECK(fooGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

void set_device(c10::DeviceIndex device) {
  check_device_index(device);
  FOO_CHECK(fooSetDevice(device));
}

c10::DeviceIndex exchange_device(c10::DeviceIndex device) {
  auto previous = current_device();
  if (device != previous) set_device(device);
  return previous;
}

void device_synchronize(c10::DeviceIndex device) {
  check_device_index(device);
  lazy_init();
  FOO_CHECK(on_device(device, [] { return fooDeviceSynchronize(); }));
  reraise_kernel_warnings();
}

fooDeviceProp get_device_properties(c10::DeviceIndex device) {
  check_device_index(device);
  fooDeviceProp prop;
  FOO_CHECK(fooGetDeviceProperties(&prop, device));
  return prop;
}

}  // namespace foo
