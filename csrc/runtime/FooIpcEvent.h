// An interprocess event, as torch.cuda.Event(interprocess=True) has one: a
// foo_sim event made with fooEventInterprocess (or opened from another
// process's handle) whose records, queries and waits every process holding
// it shares (foo_sim/foo_ipc.h). Created at construction, not lazily,
// because its handle must exist before the first record.
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooStream.h"

namespace foo {

class FooIpcEvent {
 public:
  explicit FooIpcEvent(c10::DeviceIndex device);
  // Opens another process's event; `handle` is what its ipc_handle() gave.
  FooIpcEvent(c10::DeviceIndex device, const std::string& handle);
  ~FooIpcEvent();
  FooIpcEvent(const FooIpcEvent&) = delete;
  FooIpcEvent& operator=(const FooIpcEvent&) = delete;

  c10::DeviceIndex device_index() const { return device_; }
  void record(const FooStream& stream);
  void block(const FooStream& stream) const;
  bool query() const;
  void synchronize() const;
  std::string ipc_handle() const;

 private:
  c10::DeviceIndex device_;
  fooEvent_t event_ = nullptr;
};

}  // namespace foo
