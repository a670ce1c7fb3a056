#include "runtime/FooDeviceCachingAllocator.h"

#include <algorithm>
#include <string>

#include <c10/util/Exception.h>

#include "runtime/FooAllocatorSnapshot.h"
#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"

namespace foo::caching_allocator {

Block* DeviceCachingAllocator::malloc(size_t requested, fooStream_t stream) {
  std::shared_ptr<c10::GatheredContext> context;
  if (history_recording()) context = gather_context(RecordContext::STATE);  // before the lock: see FooMemoryHistory.h
  std::unique_lock<std::mutex> lock(mutex_);
  // During a capture events may not be queried (they may be captured,
  // and a global capture forbids queries), as in CUDA's allocator.
  if (!pools_.routing_under_way()) process_events();
  size_t size = round_size(requested);
  BlockPool& pool = pool_for(stream, size);
  Block* block = &pool == &small_ ? take_parked(stream, size) : nullptr;
  if (block == nullptr) {
    unpark_all();
    block = take_free_block(pool, stream, size);
  }
  if (block == nullptr) block = new_segment(lock, pool, stream, size, requested, context);
  if (should_split(block, size)) block = split(block, size);
  block->allocated = true;
  block->requested_size = requested;
  if (history_recording()) {
    trace_.record(TraceEntry::ALLOC, device_, block->ptr, requested, stream, context);
    if (history_keeps_state()) block->context = std::move(context);
  }
  stats_.allocated(*block, requested);
  report_to_profiler(block->ptr, static_cast<int64_t>(block->size));
  return block;
}

void DeviceCachingAllocator::free(Block* block) noexcept {
  std::shared_ptr<c10::GatheredContext> context;
  if (history_recording()) context = gather_context(RecordContext::ALL);
  std::lock_guard<std::mutex> lock(mutex_);
  if (history_recording()) {
    trace_.record(TraceEntry::FREE_REQUESTED, device_, block->ptr, block->requested_size, block->stream,
                  context ? context : block->context);
  }
  block->allocated = false;
  stats_.freed(*block);
  report_to_profiler(block->ptr, -static_cast<int64_t>(block->size));
  if (block->stream_uses.empty()) {
    complete_free(block, std::move(context));
    return;
  }
  if (pools_.routing_under_way()) {
    // An event recorded on a capturing stream would become part of the
    // graph instead of marking the stream's progress: recorded once no
    // capture is under way. Counted as one outstanding event meanwhile,
    // so that its neighbours do not merge with it.
    block->event_count = 1;
    deferred_.push_back(block);
    return;
  }
  record_stream_uses(block, std::move(context));
}

void DeviceCachingAllocator::record_stream_uses(Block* block, std::shared_ptr<c10::GatheredContext> context) {
  for (const FooStream& stream : block->stream_uses) {
    auto event = std::make_shared<FooEvent>();
    if (!event->try_record(stream)) continue;  // the stream is gone: no work of it to wait for
    ++block->event_count;
    pending_.emplace_back(std::move(event), block);
  }
  block->stream_uses.clear();
  if (block->event_count == 0) complete_free(block, std::move(context));
}

void DeviceCachingAllocator::record_stream(Block* block, const FooStream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream.stream() != block->stream) block->stream_uses.insert(stream);
}

void DeviceCachingAllocator::empty_cache() {
  std::unique_lock<std::mutex> lock(mutex_);
  TORCH_CHECK(!pools_.capture_under_way(),
              "torch.foo.empty_cache() is not allowed while a graph is being captured on foo device ",
              static_cast<int>(device_));
  // Inside use_mem_pool (on any thread) the device's own cache is kept, as
  // CUDA's allocator keeps it (events are not processed meanwhile); unused
  // private pools are still emptied.
  if (pools_.routing_under_way()) {
    free_whole_segments(lock, pools_.unused_block_pools());
    return;
  }
  release_cached_blocks(lock);
}

void DeviceCachingAllocator::begin_allocate_to_pool(c10::MempoolId_t id, std::function<bool(fooStream_t)> filter,
                                                    bool capture) {
  std::lock_guard<std::mutex> lock(mutex_);
  pools_.begin_routing(id, std::move(filter), capture);
}

void DeviceCachingAllocator::end_allocate_to_pool(c10::MempoolId_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ended_capture = pools_.end_routing(id);
  if (ended_capture && !pools_.capture_under_way()) {
    std::vector<BlockPool*> releasable;
    for (c10::MempoolId_t pool : empty_after_capture_) {
      for (BlockPool* p : pools_.unused_block_pools(pool)) releasable.push_back(p);
    }
    empty_after_capture_.clear();
    free_whole_segments(lock, releasable);
  }
  if (pools_.routing_under_way()) return;
  for (Block* block : deferred_) {
    block->event_count = 0;
    record_stream_uses(block, nullptr);
  }
  deferred_.clear();
}

void DeviceCachingAllocator::release_pool(c10::MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  pools_.decref(id);
}

void DeviceCachingAllocator::empty_pool(c10::MempoolId_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (pools_.capture_under_way()) {
    empty_after_capture_.push_back(id);
    return;
  }
  free_whole_segments(lock, pools_.unused_block_pools(id));
}

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  size_t free = 0, total = 0;
  FOO_CHECK(on_device(device_, [&] { return fooMemGetInfo(&free, &total); }));
  std::lock_guard<std::mutex> lock(mutex_);
  fraction_ = fraction;
  allowed_bytes_ = static_cast<size_t>(fraction * static_cast<double>(total));
}

double DeviceCachingAllocator::memory_fraction() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fraction_;
}

void DeviceCachingAllocator::create_or_incref_pool(c10::MempoolId_t id, bool use_on_oom, bool no_split) {
  std::lock_guard<std::mutex> lock(mutex_);
  PrivatePool& pool = pools_.incref(id);
  pool.use_on_oom = pool.use_on_oom || use_on_oom;
  pool.small.no_split = pool.small.no_split || no_split;
  pool.large.no_split = pool.large.no_split || no_split;
}

int DeviceCachingAllocator::pool_use_count(c10::MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pools_.use_count(id);
}

c10::CachingDeviceAllocator::DeviceStats DeviceCachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_.get();
}

void DeviceCachingAllocator::reset_accumulated() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.reset_accumulated();
}

void DeviceCachingAllocator::snapshot(std::vector<SegmentInfo>& segments, std::vector<TraceEntry>& trace) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Querying events during a capture would invalidate it (as malloc, the
  // snapshot then shows pending frees as they are).
  if (!pools_.routing_under_way()) process_events();
  append_segment_infos(device_, segments_, segments);
  trace = trace_.entries();
}

void DeviceCachingAllocator::clear_trace() {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.clear();
}

void DeviceCachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.reset_peak();
}

void DeviceCachingAllocator::report_to_profiler(void* ptr, int64_t bytes) noexcept {
  if (!c10::memoryProfilingEnabled()) return;
  try {
    c10::reportMemoryUsageToProfiler(ptr, bytes, stats_.allocated_bytes(), stats_.reserved_bytes(),
                                     c10::Device(c10::DeviceType::PrivateUse1, device_));
  } catch (...) {
    // The profiler's bookkeeping must not fail an allocation or a free.
  }
}

BlockPool& DeviceCachingAllocator::pool_for(fooStream_t stream, size_t size) {
  bool small = size <= kSmallSize;
  if (PrivatePool* pool = pools_.routed_pool(stream)) return small ? pool->small : pool->large;
  return small ? small_ : large_;
}

Block* DeviceCachingAllocator::take_from_use_on_oom_pools(fooStream_t stream, size_t size, bool small) {
  for (PrivatePool* pool : pools_.use_on_oom_pools()) {
    if (Block* block = take_free_block(small ? pool->small : pool->large, stream, size)) return block;
  }
  return nullptr;
}

Block* DeviceCachingAllocator::take_free_block(BlockPool& pool, fooStream_t stream, size_t size) {
  Block key(device_, stream, size, &pool, nullptr);
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  // Oversize blocks are kept for oversize requests, and not wasted on a
  // request much smaller than they are.
  if (size < max_split_size() && (*it)->size >= max_split_size()) return nullptr;
  if (size >= max_split_size() && (*it)->size >= size + kLargeBuffer) return nullptr;
  Block* block = *it;
  pool.blocks.erase(it);
  stats_.count_inactive_split(*block, -1);
  return block;
}

Block* DeviceCachingAllocator::new_segment(std::unique_lock<std::mutex>& lock, BlockPool& pool, fooStream_t stream,
                                           size_t size, size_t requested,
                                           const std::shared_ptr<c10::GatheredContext>& context) {
  size_t bytes = segment_size(size);
  void* ptr = nullptr;
  auto device_malloc = [&] {
    // As if the device were full.
    if (stats_.reserved_bytes() + bytes > allowed_bytes_) return fooErrorMemoryAllocation;
    return on_device(device_, [&] { return fooMalloc(&ptr, bytes); });
  };
  fooError_t e;
  if (pool.owner != c10::MempoolId_t{0, 0}) {
    // Growing a graph's pool during its capture: fooMalloc is legal here
    // (the memory is the graph's), as CUDA's allocator relaxes the mode.
    RelaxedCaptureMode relaxed;
    e = device_malloc();
  } else {
    e = device_malloc();
  }
  if (e == fooErrorMemoryAllocation && !pools_.routing_under_way()) {
    (void)fooGetLastError();
    // Free what the cache holds and try once more, as CUDA's allocator does.
    stats_.alloc_retried();
    release_cached_blocks(lock);
    e = device_malloc();
  }
  if (e == fooErrorMemoryAllocation && pool.owner == c10::MempoolId_t{0, 0}) {
    // The last resort, after the retry: a use_on_oom pool's free block.
    if (Block* block = take_from_use_on_oom_pools(stream, size, pool.is_small)) {
      (void)fooGetLastError();
      return block;
    }
  }
  if (e == fooErrorMemoryAllocation) {
    (void)fooGetLastError();
    stats_.out_of_memory();
    throw_out_of_memory(lock, requested, stream, context);
  }
  FOO_CHECK(e);
  stats_.segment_allocated(pool, bytes);
  Segment* segment =
      &segments_.emplace(reinterpret_cast<uintptr_t>(ptr), Segment{ptr, bytes, stream, &pool, nullptr, nullptr})
           .first->second;
  auto* block = new Block(device_, stream, bytes, &pool, ptr, segment);
  segment->first = block;
  if (history_recording()) {
    trace_.record(TraceEntry::SEGMENT_ALLOC, device_, ptr, bytes, stream, context);
    if (history_keeps_state()) segment->context = context;
  }
  return block;
}

void DeviceCachingAllocator::throw_out_of_memory(std::unique_lock<std::mutex>& lock, size_t requested,
                                                 fooStream_t stream,
                                                 const std::shared_ptr<c10::GatheredContext>& context) {
  size_t free = 0, total = 0;
  on_device(device_, [&] { return fooMemGetInfo(&free, &total); });
  if (history_recording()) {
    // As CUDA's: an oom entry's address field holds the device's free bytes.
    trace_.record(TraceEntry::OOM, device_, reinterpret_cast<void*>(free), requested, stream, context);
  }
  auto allocated = static_cast<uint64_t>(stats_.allocated_bytes());
  auto reserved = static_cast<uint64_t>(stats_.reserved_bytes());
  if (c10::memoryProfilingEnabled()) {
    c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(requested), allocated, reserved,
                                     c10::Device(c10::DeviceType::PrivateUse1, device_));
  }
  using c10::CachingAllocator::format_size;
  std::string limit;
  if (allowed_bytes_ != SIZE_MAX) {
    limit = ", and this process may reserve " + format_size(allowed_bytes_) + " of it (" +
            std::to_string(fraction_) + " of the capacity: torch.foo.set_per_process_memory_fraction)";
  }
  lock.unlock();
  notify_out_of_memory(device_, requested, total, free);
  TORCH_CHECK_WITH(OutOfMemoryError, false, "foo out of memory. Tried to allocate ", format_size(requested),
                   ". foo device ", static_cast<int>(device_), " has a total capacity of ", format_size(total),
                   " of which ", format_size(free), " is free", limit, ". Of the allocated memory ",
                   format_size(allocated),
                   " is allocated by PyTorch, and ", format_size(reserved - allocated),
                   " is reserved by PyTorch but unallocated. Set FOO_SIM_DEVICE_MEMORY for a larger device, or "
                   "call torch.foo.empty_cache() to release cached memory.");
}

bool DeviceCachingAllocator::should_split(const Block* block, size_t size) const {
  if (block->pool->no_split) return false;
  size_t remaining = block->size - size;
  if (block->pool->is_small) return remaining >= kMinBlockSize;
  return size < max_split_size() && remaining > kSmallSize;
}

Block* DeviceCachingAllocator::split(Block* block, size_t size) {
  auto* rest = new Block(device_, block->stream, block->size - size, block->pool,
                         static_cast<char*>(block->ptr) + size, block->segment);
  rest->prev = block;
  rest->next = block->next;
  if (rest->next) rest->next->prev = rest;
  block->next = rest;
  block->size = size;
  block->pool->blocks.insert(rest);
  stats_.count_inactive_split(*rest, +1);
  return block;
}

void DeviceCachingAllocator::complete_free(Block* block, std::shared_ptr<c10::GatheredContext> context) {
  if (history_recording()) {
    trace_.record(TraceEntry::FREE_COMPLETED, device_, block->ptr, block->requested_size, block->stream,
                  context ? std::move(context) : block->context);
  }
  block->context.reset();
  release_to_pool(block);
}

void DeviceCachingAllocator::release_to_pool(Block* block) {
  stats_.deactivated(*block);
  if (block->pool == &small_ && !history_recording()) {
    // Parked before the oldest is returned to the pool: merging that one
    // must not absorb this block, its neighbour perhaps.
    parked_.park(block);
    stats_.count_inactive_split(*block, +1);
    if (parked_.over_capacity()) unpark(parked_.oldest());
    return;
  }
  merge_and_pool(block);
}

Block* DeviceCachingAllocator::take_parked(fooStream_t stream, size_t size) {
  Block* block = parked_.take(stream, size);
  if (block != nullptr) stats_.count_inactive_split(*block, -1);
  return block;
}

void DeviceCachingAllocator::unpark(Block* block) {
  parked_.unpark(block);
  stats_.count_inactive_split(*block, -1);
  merge_and_pool(block);
}

void DeviceCachingAllocator::unpark_all() {
  while (!parked_.empty()) unpark(parked_.newest());
}

void DeviceCachingAllocator::merge_and_pool(Block* block) {
  for (Block* neighbour : {block->prev, block->next}) {
    if (neighbour == nullptr || neighbour->allocated || neighbour->parked || neighbour->event_count > 0) continue;
    block->pool->blocks.erase(neighbour);
    stats_.count_inactive_split(*neighbour, -1);
    if (neighbour == block->prev) {
      block->ptr = neighbour->ptr;
      block->prev = neighbour->prev;
      if (block->prev) block->prev->next = block;
      if (block->segment->first == neighbour) block->segment->first = block;
    } else {
      block->next = neighbour->next;
      if (block->next) block->next->prev = block;
    }
    block->size += neighbour->size;
    delete neighbour;
  }
  block->pool->blocks.insert(block);
  stats_.count_inactive_split(*block, +1);
}

void DeviceCachingAllocator::process_events() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!it->first->query()) {
      ++it;
      continue;
    }
    Block* block = it->second;
    it = pending_.erase(it);
    if (--block->event_count == 0) complete_free(block, nullptr);
  }
}

void DeviceCachingAllocator::release_cached_blocks(std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<FooEvent>> waits;
  for (auto& [event, block] : pending_) waits.push_back(event);
  lock.unlock();
  for (auto& event : waits) event->synchronize();
  lock.lock();
  process_events();
  unpark_all();  // after the wait: frees made meanwhile may have parked blocks
  std::vector<BlockPool*> releasable = {&small_, &large_};
  for (BlockPool* pool : pools_.unused_block_pools()) releasable.push_back(pool);
  free_whole_segments(lock, releasable);
}

void DeviceCachingAllocator::free_whole_segments(std::unique_lock<std::mutex>& lock,
                                                 const std::vector<BlockPool*>& releasable) {
  std::vector<Block*> segments;
  for (BlockPool* pool : releasable) {
    for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
      Block* block = *it;
      if (block->is_split()) {
        ++it;
        continue;
      }
      it = pool->blocks.erase(it);
      if (history_recording()) {
        trace_.record(TraceEntry::SEGMENT_FREE, device_, block->ptr, block->size, block->stream,
                      block->segment->context);
      }
      segments_.erase(reinterpret_cast<uintptr_t>(block->ptr));
      stats_.segment_freed(*pool, block->size);
      segments.push_back(block);
    }
  }
  erase_empty_private_pools();
  lock.unlock();
  fooError_t first_error = fooSuccess;
  for (Block* block : segments) {
    fooError_t e = on_device(device_, [&] { return fooFree(block->ptr); });
    if (first_error == fooSuccess) first_error = e;
    delete block;
  }
  // Every segment was handed back and the lock is held again before a
  // failure is raised.
  lock.lock();
  FOO_CHECK(first_error);
}

void DeviceCachingAllocator::erase_empty_private_pools() {
  pools_.erase_unused([&](const PrivatePool& pool) {
    return std::any_of(segments_.begin(), segments_.end(), [&](const auto& entry) {
      return entry.second.pool == &pool.small || entry.second.pool == &pool.large;
    });
  });
}

}  // namespace foo::caching_allocator
