// The caching allocator's blocks and pools (FooCachingAllocator.h), as
// CUDA's allocator has them: segments, one fooMalloc each, carved into
// blocks; free blocks kept in pools ordered by (stream, size, address).
// Everything here is guarded by the mutex of the DeviceCachingAllocator
// that owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <unordered_set>

#include <c10/core/AllocatorConfig.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooStream.h"

namespace foo::caching_allocator {

constexpr size_t kMinBlockSize = 512;         // every size is rounded to this
constexpr size_t kSmallSize = 1 << 20;        // requests up to this use the small pool
constexpr size_t kSmallBuffer = 2 << 20;      // segment size of the small pool
constexpr size_t kMinLargeAlloc = 10 << 20;   // requests below this share segments of:
constexpr size_t kLargeBuffer = 20 << 20;
constexpr size_t kRoundLarge = 2 << 20;       // bigger requests get their own segment, rounded to this

struct Block;
struct BlockPool;

// One device allocation (fooMalloc), carved into blocks. Known to the
// allocator for snapshots, which walk each segment's blocks in address order.
struct Segment {
  void* ptr;
  size_t size;
  fooStream_t stream;
  BlockPool* pool;
  Block* first;  // the block at ptr
  std::shared_ptr<c10::GatheredContext> context;  // where it was allocated, if recorded
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const;
};

struct BlockPool {
  explicit BlockPool(bool small, c10::MempoolId_t owner = {0, 0}) : is_small(small), owner(owner) {}
  std::set<Block*, BlockOrder> blocks;  // free blocks, by (stream, size, address)
  const bool is_small;
  const c10::MempoolId_t owner;  // {0, 0}: the device's own pools; else a private pool's id
  bool no_split = false;         // a request takes a whole free block (torch.foo.MemPool(no_split=True))
};

// A private memory pool (CUDA's), a graph's or a torch.foo.MemPool's: what
// is allocated while it is routed to comes from here, blocks freed in it
// stay here, and its segments are returned to foo_sim only once nobody
// uses the pool (use_count 0) and all its blocks are free again.
struct PrivatePool {
  explicit PrivatePool(c10::MempoolId_t id) : small(true, id), large(false, id) {}
  int use_count = 1;  // graphs and MemPools that hold it, and routings under way
  bool use_on_oom = false;  // its free blocks serve a request the device cannot
  BlockPool small;
  BlockPool large;
};

struct Block {
  Block(c10::DeviceIndex device, fooStream_t stream, size_t size, BlockPool* pool, void* ptr,
        Segment* segment = nullptr)
      : device(device), stream(stream), size(size), pool(pool), ptr(ptr), segment(segment) {}
  c10::DeviceIndex device;
  fooStream_t stream;     // the stream it was allocated on
  size_t size;
  size_t requested_size = 0;
  BlockPool* pool;
  void* ptr;
  Segment* segment;
  bool allocated = false;
  bool parked = false;    // freed, kept out of its pool for the next request of its size (FooAllocatorParking.h)
  Block* prev = nullptr;  // neighbours carved from the same segment
  Block* next = nullptr;
  std::unordered_set<FooStream> stream_uses;  // streams added by record_stream
  int event_count = 0;                        // outstanding events before reuse
  std::shared_ptr<c10::GatheredContext> context;  // where it was allocated, while recording

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

inline bool BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

inline size_t round_size(size_t size) {
  return size < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

inline size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

// PYTORCH_ALLOC_CONF's max_split_size_mb: blocks of this size and more are
// not split (SIZE_MAX when unset).
inline size_t max_split_size() { return c10::CachingAllocator::AcceleratorAllocatorConfig::max_split_size(); }

}  // namespace foo::caching_allocator
