// A foo event owned by C++ code (allocators, copies), in the shape of
// c10/xpu/XPUEvent.h: created lazily on the first record, destroyed with
// the object, movable but not copyable.
#pragma once

#include <c10/core/Device.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooStream.h"

namespace foo {

class FooEvent {
 public:
  explicit FooEvent(bool enable_timing = false) noexcept : enable_timing_(enable_timing) {}
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
  // Work queued on `stream` from now on waits for the recorded work.
  void block(const FooStream& stream) const;
  // True when the recorded work is done (or nothing was recorded).
  bool query() const;
  void synchronize() const;

 private:
  void swap(FooEvent& other) noexcept;

  bool enable_timing_ = false;
  c10::DeviceIndex device_index_ = -1;
  fooEvent_t event_ = nullptr;
};

}  // namespace foo
