#include "runtime/FooGuardImpl.h"

#include <c10/util/Exception.h>

#include "runtime/FooCachingAllocator.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooInit.h"
#include "runtime/FooKernelWarnings.h"
#include "runtime/FooStream.h"

namespace foo::impl {
namespace {

void check_type(c10::Device d) {
  TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, "Expected a foo device, got ", d);
}

fooEvent_t as_event(void* event) { return static_cast<fooEvent_t>(event); }

}  // namespace

FooGuardImpl::FooGuardImpl(c10::DeviceType t) {
  TORCH_CHECK(t == static_type, "FooGuardImpl initialized with non-foo device type ", t);
}

c10::Device FooGuardImpl::exchangeDevice(c10::Device d) const {
  check_type(d);
  return c10::Device(static_type, exchange_device(d.index()));
}

c10::Device FooGuardImpl::getDevice() const { return c10::Device(static_type, current_device()); }

void FooGuardImpl::setDevice(c10::Device d) const {
  check_type(d);
  set_device(d.index());
}

void FooGuardImpl::uncheckedSetDevice(c10::Device d) const noexcept { fooSetDevice(d.index()); }

c10::Stream FooGuardImpl::getStream(c10::Device d) const { return getCurrentFooStream(d.index()).unwrap(); }

c10::Stream FooGuardImpl::getDefaultStream(c10::Device d) const { return getDefaultFooStream(d.index()).unwrap(); }

c10::Stream FooGuardImpl::getNewStream(c10::Device d, int priority) const {
  return getStreamFromPool(priority, d.index()).unwrap();
}

c10::Stream FooGuardImpl::getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const {
  return getStreamFromPool(isHighPriority, d.index()).unwrap();
}

c10::Stream FooGuardImpl::exchangeStream(c10::Stream s) const {
  FooStream stream(s);
  auto previous = getCurrentFooStream(stream.device_index());
  setCurrentFooStream(stream);
  return previous.unwrap();
}

void* FooGuardImpl::getStreamNativeHandle(const c10::Stream s) const { return FooStream(s).stream(); }

bool FooGuardImpl::queryStream(const c10::Stream& stream) const { return FooStream(stream).query(); }

void FooGuardImpl::synchronizeStream(const c10::Stream& stream) const { FooStream(stream).synchronize(); }

bool FooGuardImpl::isStreamCapturing(const c10::Stream& stream) const {
  return foo::is_capturing(FooStream(stream));
}

void FooGuardImpl::destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept {
  if (event != nullptr) fooEventDestroy(as_event(event));
}

void FooGuardImpl::record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                          const c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
              static_cast<int>(device_index), " does not match recording stream's device index ",
              static_cast<int>(stream.device_index()), ".");
  FooStream foo_stream(stream);
  if (*event == nullptr) {
    // BACKEND_DEFAULT asks for timing; PYTORCH_DEFAULT does not (cheaper).
    unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? fooEventDefault : fooEventDisableTiming;
    fooEvent_t created = nullptr;
    on_device(stream.device_index(), [&] { FOO_CHECK(fooEventCreateWithFlags(&created, flags)); });
    *event = created;
  }
  FOO_CHECK(fooEventRecord(as_event(*event), foo_stream.stream()));
}

void FooGuardImpl::block(void* event, const c10::Stream& stream) const {
  if (event == nullptr) return;  // never recorded: nothing to wait for
  // The event may belong to another device: foo_sim, like CUDA, allows it.
  FOO_CHECK(fooStreamWaitEvent(FooStream(stream).stream(), as_event(event), 0));
}

bool FooGuardImpl::queryEvent(void* event) const {
  return event == nullptr || query_result(fooEventQuery(as_event(event)));
}

void FooGuardImpl::synchronizeEvent(void* event) const {
  if (event == nullptr) return;
  FOO_CHECK(fooEventSynchronize(as_event(event)));
  reraise_kernel_warnings();
}

double FooGuardImpl::elapsedTime(void* event1, void* event2, const c10::DeviceIndex /*device_index*/) const {
  TORCH_CHECK(event1 && event2, "Both events must be recorded before calculating elapsed time.");
  float ms = 0;
  FOO_CHECK(fooEventElapsedTime(&ms, as_event(event1), as_event(event2)));
  return static_cast<double>(ms);
}

c10::DeviceIndex FooGuardImpl::deviceCount() const noexcept { return device_count(); }

c10::DeviceCapability FooGuardImpl::getDeviceCapability(c10::Device d) const {
  check_type(d);
  check_device_index(d.index());
  // Kernels run ATen's CPU implementations on device memory, so foo
  // supports the dtypes the CPU does, but for the quantized ones: foo
  // registers no quantized kernels (a call that would make a quantized foo
  // tensor raises NotImplementedError).
  c10::DeviceCapability capability;
  auto& types = capability.capability_data.supported_scalar_types;
  types.has_QInt8 = types.has_QUInt8 = types.has_QInt32 = types.has_QUInt4x2 = types.has_QUInt2x4 = 0;
  return capability;
}

void FooGuardImpl::synchronizeDevice(const c10::DeviceIndex device_index) const { device_synchronize(device_index); }

void FooGuardImpl::recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const {
  getFooDeviceAllocator()->recordStream(data_ptr, stream);
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, FooGuardImpl);

}  // namespace foo::impl
