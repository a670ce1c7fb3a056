// A foo event owned by C++ code (allocators, copies), in the shape of
// c10/xpu/XPUEvent.h: created lazily on the first record, destroyed with
// the object, movable but not copyable. Without timing, and created to
// ignore kernel failures: these events only order work, and their queries
// must never take a failure away from the user's own synchronizations.
#pragma once

#include <c10/core/Device.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooStream.h"

namespace foo {

class FooEvent {
 public:
  FooEvent() noexcept = default;
  ~FooEvent();
  FooEvent(const FooEvent&) = delete;
  FooEvent& operator=(const FooEvent&) = delete;
  FooEvent(FooEvent&& other) noexcept { swap(other); }
  FooEvent& operator=(FooEvent&& other) noexcept {
    if (this != &other) swap(other);
    return *this;
  }

  // Captures the work queued on `stream` so far. The stream must be on the
  // event's device once the event exists.
  void record(const FooStream& stream);
  // Like record, for code that must not throw (deleters): false if the
  // event could not be recorded on the stream.
  bool try_record(const FooStream& stream) noexcept;
  // Work queued on `stream` from now on waits for the recorded work.
  void block(const FooStream& stream) const;
  // True when the recorded work is done (or nothing was recorded), whether
  // or not it failed. Never throws, so deleters may ask.
  bool query() const noexcept;
  // Waits until query() would be true.
  void synchronize() const noexcept;

 private:
  void swap(FooEvent& other) noexcept;

  c10::DeviceIndex device_index_ = -1;
  fooEvent_t event_ = nullptr;
};

}  // namespace foo
