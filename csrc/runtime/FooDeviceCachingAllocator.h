// One device's caching allocator (CUDA's DeviceCachingAllocator): its pools,
// blocks, segments and statistics behind one mutex. FooCachingAllocator.cpp
// keeps one per device and registers them as the PrivateUse1 allocator; the
// pieces it is made of live beside it: blocks and pools
// (FooAllocatorBlocks.h), private pools and their routings
// (FooAllocatorPools.h), parked blocks (FooAllocatorParking.h), statistics
// (FooAllocatorStats.h), snapshots (FooAllocatorSnapshot.h) and the
// recorded history (FooMemoryHistory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooAllocatorBlocks.h"
#include "runtime/FooAllocatorParking.h"
#include "runtime/FooAllocatorPools.h"
#include "runtime/FooAllocatorStats.h"
#include "runtime/FooEvent.h"
#include "runtime/FooMemoryHistory.h"
#include "runtime/FooStream.h"

namespace foo::caching_allocator {

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(c10::DeviceIndex device)
      : device_(device), small_(true), large_(false), pools_(device) {}

  Block* malloc(size_t requested, fooStream_t stream);
  // Never throws: it runs in DataPtr deleters.
  void free(Block* block) noexcept;
  // Tensor.record_stream: `stream` uses the block too.
  void record_stream(Block* block, const FooStream& stream);
  void empty_cache();

  // From now on, allocations that `filter` accepts come from private pool
  // `id` (created, or shared: one more use). The innermost routing wins.
  void begin_allocate_to_pool(c10::MempoolId_t id, std::function<bool(fooStream_t)> filter, bool capture);
  // The end of a capture or a use_mem_pool: the pool keeps its memory.
  void end_allocate_to_pool(c10::MempoolId_t id);
  // A graph or MemPool using pool `id` is gone. As CUDA's releasePool,
  // this only counts: a pool with no user left is freeable, and its free
  // segments go back with the rest of the cache (empty_cache, or the retry
  // of an allocation the device refused). Never waits for the device.
  void release_pool(c10::MempoolId_t id);
  // As CUDA's emptyCache(id), which a MemPool's end calls: the free whole
  // segments of pool `id`, if nobody uses it, go back now (at the end of
  // the graph capture under way, if there is one), without waiting for
  // events.
  void empty_pool(c10::MempoolId_t id);
  void create_or_incref_pool(c10::MempoolId_t id, bool use_on_oom, bool no_split);
  int pool_use_count(c10::MempoolId_t id);

  // torch.foo.set_per_process_memory_fraction: this process may reserve
  // at most `fraction` of the device's capacity.
  void set_memory_fraction(double fraction);
  double memory_fraction();

  c10::CachingDeviceAllocator::DeviceStats stats();
  void reset_accumulated();
  void reset_peak();

  // The segments with their blocks, and the trace, as a snapshot reports them.
  void snapshot(std::vector<SegmentInfo>& segments, std::vector<TraceEntry>& trace);
  void clear_trace();

 private:
  // Other streams used the block: it becomes free once the work they have
  // queued so far is done.
  void record_stream_uses(Block* block, std::shared_ptr<c10::GatheredContext> context);
  // torch.profiler(profile_memory=True) records allocations and frees
  // through this, as it does CUDA's; a thread-local lookup when it is off.
  void report_to_profiler(void* ptr, int64_t bytes) noexcept;
  // The pool an allocation of `size` bytes on `stream` comes from: the
  // private pool of the innermost routing that takes it, else the device's.
  BlockPool& pool_for(fooStream_t stream, size_t size);
  // A free block of a use_on_oom pool for a request the device could not
  // serve; it stays that pool's, and goes back to it when freed.
  Block* take_from_use_on_oom_pools(fooStream_t stream, size_t size, bool small);
  Block* take_free_block(BlockPool& pool, fooStream_t stream, size_t size);
  Block* new_segment(std::unique_lock<std::mutex>& lock, BlockPool& pool, fooStream_t stream, size_t size,
                     size_t requested, const std::shared_ptr<c10::GatheredContext>& context);
  // Records the failure (with the state of the cache, which a snapshot
  // taken by an observer shows), tells the observers with the lock
  // released, and raises torch.OutOfMemoryError.
  [[noreturn]] void throw_out_of_memory(std::unique_lock<std::mutex>& lock, size_t requested, fooStream_t stream,
                                        const std::shared_ptr<c10::GatheredContext>& context);
  bool should_split(const Block* block, size_t size) const;
  // Cuts `block` to `size` and puts the rest back in its pool.
  Block* split(Block* block, size_t size);
  // The end of a free: recorded, then the block goes back to its pool.
  void complete_free(Block* block, std::shared_ptr<c10::GatheredContext> context);
  // A block nobody uses any more: parked for the next request of its size
  // on its stream, or merged with its free neighbours and pooled.
  void release_to_pool(Block* block);
  Block* take_parked(fooStream_t stream, size_t size);
  void unpark(Block* block);
  void unpark_all();
  void merge_and_pool(Block* block);
  // Frees the blocks whose other-stream users have finished.
  void process_events();
  // Returns every free whole segment of the device's pools and of the
  // private pools nobody uses to foo_sim, after waiting for the blocks
  // still waiting on other streams. The waits (for those streams, and
  // fooFree's for the device) happen with the lock released, so other
  // threads keep allocating meanwhile.
  void release_cached_blocks(std::unique_lock<std::mutex>& lock);
  // Returns the free whole segments of `releasable`, without waiting for
  // events: also while a use_mem_pool is under way (not during a graph
  // capture, whose mode may forbid fooFree).
  void free_whole_segments(std::unique_lock<std::mutex>& lock, const std::vector<BlockPool*>& releasable);
  // Unused private pools whose memory is all returned are forgotten.
  void erase_empty_private_pools();

  const c10::DeviceIndex device_;
  std::mutex mutex_;
  double fraction_ = 1.0;
  size_t allowed_bytes_ = SIZE_MAX;  // no limit until a fraction is set
  BlockPool small_;
  BlockPool large_;
  PrivatePools pools_;
  std::vector<Block*> deferred_;  // frees whose stream uses wait for the routings to end
  std::vector<c10::MempoolId_t> empty_after_capture_;  // empty_pool calls made during a capture
  ParkedBlocks parked_;           // freed small blocks (release_to_pool)
  std::deque<std::pair<std::shared_ptr<FooEvent>, Block*>> pending_;
  AllocatorStats stats_;
  std::map<uintptr_t, Segment> segments_;  // by address, for snapshots
  TraceRing trace_;
};

}  // namespace foo::caching_allocator
