// The caching allocator's statistics: c10's DeviceStats, kept as CUDA's
// allocator keeps them (counts and bytes of allocations, active blocks,
// inactive split blocks, segments and reserved memory, for the small pool,
// the large pool and both). Guarded by the owning DeviceCachingAllocator's
// mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#include "runtime/FooAllocatorBlocks.h"

namespace foo::caching_allocator {

class AllocatorStats {
 public:
  using DeviceStats = c10::CachingDeviceAllocator::DeviceStats;

  // `block` was handed out for `requested` bytes, and is active until
  // deactivated.
  void allocated(const Block& block, size_t requested);
  // The user freed `block`; other streams may still use it.
  void freed(const Block& block);
  // `block` is no longer in use: it goes back to its pool (or is parked).
  void deactivated(const Block& block);
  // CUDA's inactive_split statistics: free blocks (pooled or parked) cut
  // from a segment that other blocks share, as they come (+1) and go (-1).
  void count_inactive_split(const Block& block, int sign);
  void segment_allocated(const BlockPool& pool, size_t bytes);
  void segment_freed(const BlockPool& pool, size_t bytes);
  void alloc_retried() { ++stats_.num_alloc_retries; }
  void out_of_memory() { ++stats_.num_ooms; }

  // Current totals over both pools.
  size_t allocated_bytes() const;
  size_t reserved_bytes() const;

  // A copy, with the max_split_size in force.
  DeviceStats get() const;
  void reset_accumulated();
  void reset_peak();

 private:
  void update_reserved(const BlockPool& pool, int64_t bytes);
  std::vector<c10::CachingAllocator::StatArray*> stat_arrays();

  DeviceStats stats_;
};

}  // namespace foo::caching_allocator
