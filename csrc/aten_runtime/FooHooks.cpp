#include "aten_runtime/FooHooks.h"

#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include "aten_runtime/FooGenerator.h"
#include "aten_runtime/FooHostAllocator.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"
#include "runtime/FooStorage.h"

namespace foo {

bool FooHooks::isAvailable() const { return device_count() > 0; }

bool FooHooks::hasPrimaryContext(c10::DeviceIndex device_index) const {
  check_device_index(device_index);
  return is_initialized();
}

void FooHooks::init() const { lazy_init(); }

c10::DeviceIndex FooHooks::deviceCount() const { return device_count(); }

void FooHooks::setCurrentDevice(c10::DeviceIndex device) const { set_device(device); }

c10::DeviceIndex FooHooks::getCurrentDevice() const { return current_device(); }

c10::DeviceIndex FooHooks::exchangeDevice(c10::DeviceIndex device) const { return exchange_device(device); }

c10::DeviceIndex FooHooks::maybeExchangeDevice(c10::DeviceIndex device) const {
  return exchange_device(device);
}

at::Device FooHooks::getDeviceFromPtr(void* data) const {
  fooPointerAttributes attr;
  FOO_CHECK(fooPointerGetAttributes(&attr, data));
  TORCH_CHECK(attr.type == fooMemoryTypeDevice, "The pointer ", data, " is not foo device memory");
  return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(attr.device));
}

const at::Generator& FooHooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return default_generator(device_index);
}

at::Generator FooHooks::getNewGenerator(c10::DeviceIndex device_index) const { return make_generator(device_index); }

bool FooHooks::isPinnedPtr(const void* data) const { return is_pinned_ptr(data); }

at::Allocator* FooHooks::getPinnedMemoryAllocator() const { return getFooHostAllocator(); }

void FooHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  resize_bytes(storage.unsafeGetStorageImpl(), newsize);
}

namespace {

// Loading the library names the backend and installs the hooks, so that
// torch.device("foo") parses even before the Python package finishes.
const bool g_registered = [] {
  c10::register_privateuse1_backend("foo");
  static FooHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

}  // namespace

}  // namespace foo
