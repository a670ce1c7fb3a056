#include "runtime/FooRawAlloc.h"

#include <mutex>
#include <unordered_map>

#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include "runtime/FooCachingAllocator.h"

namespace foo {

namespace {

struct HeldBlocks {
  std::mutex mutex;
  std::unordered_map<void*, c10::DataPtr> blocks;
};

HeldBlocks& held() {
  static auto* instance = new HeldBlocks();  // never destroyed: blocks may be deleted during exit
  return *instance;
}

}  // namespace

void* raw_alloc_with_stream(size_t nbytes, c10::Stream stream) {
  if (nbytes == 0) return nullptr;
  // The allocator serves the current stream of the block's device.
  c10::StreamGuard guard(stream);
  c10::DataPtr block = getFooDeviceAllocator()->allocate(nbytes);
  void* ptr = block.get();
  HeldBlocks& h = held();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.blocks.emplace(ptr, std::move(block));
  return ptr;
}

void raw_delete(void* ptr) {
  if (ptr == nullptr) return;
  c10::DataPtr block;
  {
    HeldBlocks& h = held();
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.blocks.find(ptr);
    TORCH_CHECK(it != h.blocks.end(), "invalid device pointer: ", ptr,
                " (not a block from torch.foo.caching_allocator_alloc, or deleted already)");
    block = std::move(it->second);
    h.blocks.erase(it);
  }
  // The block goes back to the allocator here, outside the lock.
}

}  // namespace foo
