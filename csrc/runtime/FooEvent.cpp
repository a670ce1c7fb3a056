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
  std::swap(device_index_, other.device_index_);
  std::swap(event_, other.event_);
}

void FooEvent::record(const FooStream& stream) {
  if (event_ == nullptr) {
    FOO_CHECK(on_device(stream.device_index(), [&] { return fooEventCreateWithFlags(&event_, fooEventDisableTiming | fooEventIgnoreFailures); }));
    device_index_ = stream.device_index();
  }
  TORCH_CHECK(device_index_ == stream.device_index(), "Event device ", static_cast<int>(device_index_),
              " does not match recording stream's device ", static_cast<int>(stream.device_index()), ".");
  FOO_CHECK(fooEventRecord(event_, stream.stream()));
}

void FooEvent::block(const FooStream& stream) const {
  if (event_ != nullptr) FOO_CHECK(fooStreamWaitEvent(stream.stream(), event_, 0));
}

bool FooEvent::try_record(const FooStream& stream) noexcept {
  try {
    record(stream);
    return true;
  } catch (...) {
    (void)fooGetLastError();
    return false;
  }
}

// With fooEventIgnoreFailures the runtime reports no kernel failure here;
// any other error would mean a destroyed event, which owning it rules out.
bool FooEvent::query() const noexcept {
  if (event_ == nullptr) return true;
  fooError_t e = fooEventQuery(event_);
  if (e != fooSuccess) (void)fooGetLastError();  // NotReady is recorded as the last error too
  return e != fooErrorNotReady;
}

void FooEvent::synchronize() const noexcept {
  if (event_ != nullptr && fooEventSynchronize(event_) != fooSuccess) (void)fooGetLastError();
}

}  // namespace foo
