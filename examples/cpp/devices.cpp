// Names no torch_foo symbol: linking TorchFoo::torch_foo is all a libtorch
// program needs for foo to be a device, since loading libtorch_foo registers
// the backend. Prints what libtorch now knows of foo; exit status 1 if a
// piece is missing.
#include <cstdio>

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace {

bool report(const char* what, bool ok) {
  std::printf("%-12s %s\n", what, ok ? "yes" : "MISSING");
  return ok;
}

}  // namespace

int main() {
  const c10::DeviceType type = c10::DeviceType::PrivateUse1;
  bool ok = report("name", c10::get_privateuse1_backend() == "foo");
  if (!ok) return 1;  // "foo:0" would not even parse
  const c10::Device device("foo:0");
  ok &= report("guard", c10::impl::hasDeviceGuardImpl(type) && c10::impl::getDeviceGuardImpl(type)->deviceCount() > 0);
  ok &= report("hooks", at::isPrivateUse1HooksRegistered() && at::detail::getPrivateUse1Hooks().isAvailable());
  ok &= report("allocator", c10::getDeviceAllocator(type) != nullptr);
  ok &= report("pinned", at::getHostAllocator(type) != nullptr);
  ok &= report("generator", at::globalContext().defaultGenerator(device).device() == device);
  ok &= report("accelerator", at::getAccelerator() == type);
  std::printf("%s is %s\n", device.str().c_str(), ok ? "ready" : "incomplete");
  return ok ? 0 : 1;
}
