#include "runtime/FooAllocatorStats.h"

namespace foo::caching_allocator {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;

constexpr size_t kAggregate = static_cast<size_t>(StatType::AGGREGATE);

void update(StatArray& stat, bool small, int64_t amount) {
  for (auto type : {StatType::AGGREGATE, small ? StatType::SMALL_POOL : StatType::LARGE_POOL}) {
    Stat& s = stat[static_cast<size_t>(type)];
    if (amount > 0) {
      s.increase(static_cast<size_t>(amount));
    } else if (amount < 0) {
      s.decrease(static_cast<size_t>(-amount));
    }
  }
}

}  // namespace

void AllocatorStats::allocated(const Block& block, size_t requested) {
  const bool small = block.pool->is_small;
  update(stats_.allocation, small, 1);
  update(stats_.allocated_bytes, small, static_cast<int64_t>(block.size));
  update(stats_.active, small, 1);
  update(stats_.active_bytes, small, static_cast<int64_t>(block.size));
  update(stats_.requested_bytes, small, static_cast<int64_t>(requested));
  if (block.size >= max_split_size()) stats_.oversize_allocations.increase(1);
}

void AllocatorStats::freed(const Block& block) {
  const bool small = block.pool->is_small;
  update(stats_.allocation, small, -1);
  update(stats_.allocated_bytes, small, -static_cast<int64_t>(block.size));
  update(stats_.requested_bytes, small, -static_cast<int64_t>(block.requested_size));
  if (block.size >= max_split_size()) stats_.oversize_allocations.decrease(1);
}

void AllocatorStats::deactivated(const Block& block) {
  const bool small = block.pool->is_small;
  update(stats_.active, small, -1);
  update(stats_.active_bytes, small, -static_cast<int64_t>(block.size));
}

void AllocatorStats::count_inactive_split(const Block& block, int sign) {
  if (!block.is_split()) return;
  const bool small = block.pool->is_small;
  update(stats_.inactive_split, small, sign);
  update(stats_.inactive_split_bytes, small, sign * static_cast<int64_t>(block.size));
}

void AllocatorStats::segment_allocated(const BlockPool& pool, size_t bytes) {
  ++stats_.num_device_alloc;
  update(stats_.segment, pool.is_small, 1);
  update_reserved(pool, static_cast<int64_t>(bytes));
  if (bytes >= max_split_size()) stats_.oversize_segments.increase(1);
}

void AllocatorStats::segment_freed(const BlockPool& pool, size_t bytes) {
  ++stats_.num_device_free;
  update(stats_.segment, pool.is_small, -1);
  update_reserved(pool, -static_cast<int64_t>(bytes));
  if (bytes >= max_split_size()) stats_.oversize_segments.decrease(1);
}

size_t AllocatorStats::allocated_bytes() const {
  return static_cast<size_t>(stats_.allocated_bytes[kAggregate].current);
}

size_t AllocatorStats::reserved_bytes() const { return static_cast<size_t>(stats_.reserved_bytes[kAggregate].current); }

AllocatorStats::DeviceStats AllocatorStats::get() const {
  DeviceStats copy = stats_;
  copy.max_split_size = static_cast<int64_t>(max_split_size() == SIZE_MAX ? -1 : max_split_size());
  return copy;
}

void AllocatorStats::reset_accumulated() {
  for (StatArray* a : stat_arrays()) {
    for (Stat& s : *a) s.reset_accumulated();
  }
  stats_.oversize_allocations.reset_accumulated();
  stats_.oversize_segments.reset_accumulated();
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void AllocatorStats::reset_peak() {
  for (StatArray* a : stat_arrays()) {
    for (Stat& s : *a) s.reset_peak();
  }
  stats_.oversize_allocations.reset_peak();
  stats_.oversize_segments.reset_peak();
}

void AllocatorStats::update_reserved(const BlockPool& pool, int64_t bytes) {
  update(stats_.reserved_bytes, pool.is_small, bytes);
  if (pool.owner != c10::MempoolId_t{0, 0}) update(stats_.reserved_bytes_by_private_pools[pool.owner], pool.is_small, bytes);
}

std::vector<c10::CachingAllocator::StatArray*> AllocatorStats::stat_arrays() {
  return {&stats_.allocation,      &stats_.segment,        &stats_.active,        &stats_.inactive_split,
          &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes,
          &stats_.requested_bytes};
}

}  // namespace foo::caching_allocator
