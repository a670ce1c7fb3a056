#include "runtime/FooEvent.h"

#include <utility>

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"

namespace foo {

FooEvent::~FooEvent() {
  if (event_ != nullptr) fooEventDestroy(event_);  // never throws from a destructor
}

void FooEvent::swap(FooEvent& other) noexcept {
  std::swap(enable_timing_, other.enable_timing_);
  std::swap(device_index_, other.device_index_);
  std::swap(event_, other.event_);
}

void FooEvent::record(const FooStream& stream) {
  if (event_ == nullptr) {
    unsigned flags = enable_timing_ ? fooEventDefault : fooEventDisableTiming;
    FOO_CHECK(on_device(stream.device_index(), [&] { return fooEventCreateWithFlags(&event_, flags); }));
    device_index_ = stream.device_index();
  }
  TORCH_CHECK(device_index_ == stream.device_index(), "Event device ", static_cast<int>(device_index_),
              " does not match recording stream's device ", static_cast<int>(stream.device_index()), ".");
  FOO_CHECK(fooEventRecord(event_, stream.stream()));
}

void FooEvent::block(const FooStream& stream) const {
  if (event_ != nullptr) FOO_CHECK(fooStreamWaitEvent(stream.stream(), event_, 0));
}

bool FooEvent::query() const {
  if (event_ == nullptr) return true;
  fooError_t e = fooEventQuery(event_);
  if (e == fooErrorNotReady) {
    (void)fooGetLastError();
    return false;
  }
  FOO_CHECK(e);
  return true;
}

void FooEvent::synchronize() const {
  if (event_ != nullptr) FOO_CHECK(fooEventSynchronize(event_));
}

}  // namespace foo
