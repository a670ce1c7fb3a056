#include "memory.h"

#include <cstdlib>
#include <new>

#include "error.h"

namespace foo_sim {
namespace {

// Device blocks are aligned like a GPU allocation; pinned host blocks to a page.
constexpr size_t kDeviceAlignment = 256;
constexpr size_t kHostAlignment = 4096;
// Freed device memory kept for reuse at most (MemoryRegistry::recycled_).
constexpr size_t kRecycledBytes = 128 << 20;

void* aligned_block(size_t alignment, size_t size) {
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size) != 0) return nullptr;
  return p;
}

}  // namespace

MemoryRegistry::MemoryRegistry(int device_count, size_t device_capacity)
    : used_(static_cast<size_t>(device_count), 0), capacity_(device_capacity) {}

fooError_t MemoryRegistry::allocate_device(int device, size_t size, void** out) {
  *out = nullptr;
  if (size == 0) return fooSuccess;  // as cudaMalloc: a null pointer, no error
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t in_use = used_[device];
    if (size > capacity_ - in_use) {
      return fail(fooErrorMemoryAllocation,
                  format("out of memory on foo device %d: tried to allocate %zu bytes; "
                         "capacity %zu bytes, %zu bytes in use, %zu bytes free",
                         device, size, capacity_, in_use, capacity_ - in_use));
    }
    used_[device] += size;  // reserve before the (slow) system allocation
    for (auto it = recycled_.begin(); it != recycled_.end(); ++it) {
      if (it->size != size) continue;
      Allocation a = *it;
      recycled_.erase(it);
      recycled_bytes_ -= size;
      a.device = device;
      blocks_[reinterpret_cast<uintptr_t>(a.base)] = a;
      *out = a.base;
      return fooSuccess;
    }
  }
  // A shared file (page-aligned, so aligned like a GPU allocation too);
  // private memory if the process has no descriptor left.
  void* p = nullptr;
  ipc::SegmentName shared;
  if (!ipc::create_segment(size, &p, &shared)) p = aligned_block(kDeviceAlignment, size);
  std::lock_guard<std::mutex> lock(mutex_);
  if (p == nullptr) {
    used_[device] -= size;
    return fail(fooErrorMemoryAllocation,
                format("out of memory on foo device %d: the host could not provide %zu bytes", device, size));
  }
  blocks_[reinterpret_cast<uintptr_t>(p)] = Allocation{p, size, fooMemoryTypeDevice, device, shared, false, false};
  *out = p;
  return fooSuccess;
}

fooError_t MemoryRegistry::allocate_host(size_t size, void** out) {
  *out = nullptr;
  if (size == 0) return fooSuccess;
  void* p = aligned_block(kHostAlignment, size);
  if (p == nullptr) {
    return fail(fooErrorMemoryAllocation, format("out of pinned host memory: tried to allocate %zu bytes", size));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[reinterpret_cast<uintptr_t>(p)] = Allocation{p, size, fooMemoryTypeHost, -1, {}, false, false};
  *out = p;
  return fooSuccess;
}

fooError_t MemoryRegistry::release(void* ptr, fooMemoryType type, Allocation* freed) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks_.end() || it->second.type != type || it->second.imported) {
    const char* what = type == fooMemoryTypeDevice ? "fooMalloc" : "fooMallocHost";
    return fail(fooErrorInvalidValue,
                format("pointer %p was not returned by %s or was already freed", ptr, what));
  }
  *freed = it->second;
  blocks_.erase(it);
  if (freed->type == fooMemoryTypeDevice) used_[freed->device] -= freed->size;
  if (freed->type == fooMemoryTypeDevice && freed->shared.fd >= 0 && !freed->exported &&
      freed->size <= kRecycledBytes - recycled_bytes_) {
    recycled_.push_back(*freed);
    recycled_bytes_ += freed->size;
    return fooSuccess;
  }
  lock.unlock();
  if (freed->shared.fd >= 0) {
    ipc::destroy_segment(freed->base, freed->size, freed->shared.fd);
  } else {
    std::free(freed->base);
  }
  return fooSuccess;
}

void MemoryRegistry::mark_exported(void* base) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(base));
  if (it != blocks_.end()) it->second.exported = true;
}

void MemoryRegistry::add_imported(const Allocation& block) {
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[reinterpret_cast<uintptr_t>(block.base)] = block;
}

bool MemoryRegistry::forget_imported(void* ptr, Allocation* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks_.end() || !it->second.imported) return false;
  *out = it->second;
  blocks_.erase(it);
  return true;
}

bool MemoryRegistry::find(const void* ptr, Allocation* out) const {
  auto key = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(key);
  if (it == blocks_.begin()) return false;
  --it;
  if (key >= it->first + it->second.size) return false;
  *out = it->second;
  return true;
}

bool MemoryRegistry::covers(const void* ptr, size_t count, fooMemoryType type, int device) const {
  Allocation a;
  if (!find(ptr, &a) || a.type != type || (device >= 0 && a.device != device)) return false;
  auto offset = reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(a.base);
  return count <= a.size - offset;
}

size_t MemoryRegistry::used(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_[device];
}

}  // namespace foo_sim
