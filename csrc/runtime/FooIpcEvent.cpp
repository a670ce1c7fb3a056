#include "runtime/FooIpcEvent.h"

#include <cstring>

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooInit.h"

namespace foo {

FooIpcEvent::FooIpcEvent(c10::DeviceIndex device) : device_(device) {
  check_device_index(device);
  lazy_init();
  FOO_CHECK(on_device(device, [&] { return fooEventCreateWithFlags(&event_, fooEventDisableTiming | fooEventInterprocess); }));
}

FooIpcEvent::FooIpcEvent(c10::DeviceIndex device, const std::string& handle) : device_(device) {
  check_device_index(device);
  TORCH_CHECK_VALUE(handle.size() == sizeof(fooIpcEventHandle_t), "a foo event handle is ",
                    sizeof(fooIpcEventHandle_t), " bytes, got ", handle.size());
  lazy_init();
  fooIpcEventHandle_t h;
  std::memcpy(h.reserved, handle.data(), sizeof h.reserved);
  FOO_CHECK(on_device(device, [&] { return fooIpcOpenEventHandle(&event_, h); }));
}

FooIpcEvent::~FooIpcEvent() {
  if (event_ != nullptr && !in_bad_fork()) (void)fooEventDestroy(event_);
}

void FooIpcEvent::record(const FooStream& stream) {
  TORCH_CHECK(stream.device_index() == device_, "Event device ", static_cast<int>(device_),
              " does not match recording stream's device ", static_cast<int>(stream.device_index()), ".");
  FOO_CHECK(fooEventRecord(event_, stream.stream()));
}

void FooIpcEvent::block(const FooStream& stream) const { FOO_CHECK(fooStreamWaitEvent(stream.stream(), event_, 0)); }

bool FooIpcEvent::query() const {
  fooError_t e = fooEventQuery(event_);
  if (e == fooErrorNotReady) {
    (void)fooGetLastError();
    return false;
  }
  FOO_CHECK(e);
  return true;
}

void FooIpcEvent::synchronize() const { FOO_CHECK(fooEventSynchronize(event_)); }

std::string FooIpcEvent::ipc_handle() const {
  fooIpcEventHandle_t h;
  FOO_CHECK(fooIpcGetEventHandle(&h, event_));
  return std::string(h.reserved, sizeof h.reserved);
}

}  // namespace foo
