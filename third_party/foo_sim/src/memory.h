// Every block of device and pinned host memory the runtime handed out, so
// that frees, copies and pointer queries can be validated instead of
// crashing on a foreign or stale pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "foo_sim/foo_runtime.h"
#include "ipc_segment.h"

namespace foo_sim {

struct Allocation {
  void* base = nullptr;
  size_t size = 0;
  fooMemoryType type = fooMemoryTypeUnregistered;
  int device = -1;  // -1 for pinned host memory
  // Device memory is a shared file another process can open (foo_ipc.h),
  // unless the process could have no more descriptors (shared.fd < 0).
  ipc::SegmentName shared;
  bool imported = false;  // another process's, opened by fooIpcOpenMemHandle
  bool exported = false;  // a handle to it was made (fooIpcGetMemHandle)
};

class MemoryRegistry {
 public:
  MemoryRegistry(int device_count, size_t device_capacity);

  // fooErrorMemoryAllocation (with a detail message) when the device's
  // capacity or the host is exhausted.
  fooError_t allocate_device(int device, size_t size, void** out);
  fooError_t allocate_host(size_t size, void** out);
  // Removes the block that starts at `ptr` if it has `type`; fills `freed`.
  fooError_t release(void* ptr, fooMemoryType type, Allocation* freed);
  // Another process's memory mapped here: device memory of `device` for
  // pointer checks, not counted in its use; forgotten by forget_imported,
  // whose caller unmaps it.
  void add_imported(const Allocation& block);
  bool forget_imported(void* ptr, Allocation* out);
  // A handle names the block at `base`: once freed, its file is never
  // reused for another allocation, so that the handle cannot open that.
  void mark_exported(void* base);

  // The allocation containing `ptr`, if any.
  bool find(const void* ptr, Allocation* out) const;
  // True when [ptr, ptr+count) lies inside one allocation of `type` (and of
  // `device` when device >= 0).
  bool covers(const void* ptr, size_t count, fooMemoryType type, int device) const;

  size_t used(int device) const;
  size_t capacity() const { return capacity_; }

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, Allocation> blocks_;  // keyed by base address
  std::vector<size_t> used_;                // bytes in use per device
  // Freed shared files no handle ever named, kept mapped for the next
  // allocation of their size: a new file's pages fault in one by one on
  // first touch (shared memory gets no huge pages), where the private
  // memory of a malloc that reuses a freed chunk is already mapped.
  std::vector<Allocation> recycled_;
  size_t recycled_bytes_ = 0;
  size_t capacity_;
};

}  // namespace foo_sim
