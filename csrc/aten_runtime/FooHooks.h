// PrivateUse1 hooks: what ATen asks of the foo backend outside the device
// guard (availability, lazy init, current device, pointers).
#pragma once

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace foo {

struct FooHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  void init() const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index = -1) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index = -1) const override;
  at::Allocator* getPinnedMemoryAllocator() const override;
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};

}  // namespace foo
