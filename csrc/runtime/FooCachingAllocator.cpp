#include "runtime/FooCachingAllocator.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include <c10/core/AllocatorConfig.h>
#include <foo_sim/foo_race.h>
#include <c10/util/Exception.h>

#include "runtime/FooEvent.h"
#include "runtime/FooException.h"
#include "runtime/FooFaults.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooInit.h"
#include "runtime/FooMemoryHistory.h"
#include "runtime/FooStream.h"

namespace foo {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

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

// While a graph is captured, or a thread is inside use_mem_pool, the
// allocations that `filter` accepts (by stream, or by thread) are routed
// to private pool `id`.
struct PoolRouting {
  c10::MempoolId_t id;
  std::function<bool(fooStream_t)> filter;
  bool capture;  // a graph capture's, not use_mem_pool's
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
  bool parked = false;    // freed, kept out of its pool for the next request of its size (DeviceCache::parked_)
  Block* prev = nullptr;  // neighbours carved from the same segment
  Block* next = nullptr;
  std::unordered_set<FooStream> stream_uses;  // streams added by record_stream
  int event_count = 0;                        // outstanding events before reuse
  std::shared_ptr<c10::GatheredContext> context;  // where it was allocated, while recording

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

bool BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

size_t round_size(size_t size) {
  return size < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

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

// One device's pools, blocks and statistics.
class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device) : device_(device), small_(true), large_(false) {}

  Block* malloc(size_t requested, fooStream_t stream) {
    std::shared_ptr<c10::GatheredContext> context;
    if (history_recording()) context = gather_context(RecordContext::STATE);  // before the lock: see FooMemoryHistory.h
    std::unique_lock<std::mutex> lock(mutex_);
    // During a capture events may not be queried (they may be captured,
    // and a global capture forbids queries), as in CUDA's allocator.
    if (routings_.empty()) process_events();
    if (C10_UNLIKELY(faults_armed())) {
      std::string fault = take_oom_fault();
      if (!fault.empty()) {
        ++stats_.num_ooms;
        throw_out_of_memory(lock, requested, stream, context, fault);
      }
    }
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
    update(stats_.allocation, pool.is_small, 1);
    update(stats_.allocated_bytes, pool.is_small, static_cast<int64_t>(block->size));
    update(stats_.active, pool.is_small, 1);
    update(stats_.active_bytes, pool.is_small, static_cast<int64_t>(block->size));
    update(stats_.requested_bytes, pool.is_small, static_cast<int64_t>(requested));
    if (block->size >= max_split_size()) stats_.oversize_allocations.increase(1);
    report_to_profiler(block->ptr, static_cast<int64_t>(block->size));
    return block;
  }

  // Never throws: it runs in DataPtr deleters.
  void free(Block* block) noexcept {
    std::shared_ptr<c10::GatheredContext> context;
    if (history_recording()) context = gather_context(RecordContext::ALL);
    std::lock_guard<std::mutex> lock(mutex_);
    if (history_recording()) {
      trace_.record(TraceEntry::FREE_REQUESTED, device_, block->ptr, block->requested_size, block->stream,
                    context ? context : block->context);
    }
    block->allocated = false;
    bool small = block->pool->is_small;
    update(stats_.allocation, small, -1);
    update(stats_.allocated_bytes, small, -static_cast<int64_t>(block->size));
    update(stats_.requested_bytes, small, -static_cast<int64_t>(block->requested_size));
    if (block->size >= max_split_size()) stats_.oversize_allocations.decrease(1);
    report_to_profiler(block->ptr, -static_cast<int64_t>(block->size));
    if (block->stream_uses.empty()) {
      complete_free(block, std::move(context));
      return;
    }
    if (!routings_.empty()) {
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

  // Other streams used the block: it becomes free once the work they have
  // queued so far is done.
  void record_stream_uses(Block* block, std::shared_ptr<c10::GatheredContext> context) {
    for (const FooStream& stream : block->stream_uses) {
      auto event = std::make_shared<FooEvent>();
      if (!event->try_record(stream)) continue;  // the stream is gone: no work of it to wait for
      ++block->event_count;
      pending_.emplace_back(std::move(event), block);
    }
    block->stream_uses.clear();
    if (block->event_count == 0) complete_free(block, std::move(context));
  }

  void record_stream(Block* block, const FooStream& stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stream.stream() != block->stream) block->stream_uses.insert(stream);
  }

  void empty_cache() {
    std::unique_lock<std::mutex> lock(mutex_);
    TORCH_CHECK(!capture_underway(), "torch.foo.empty_cache() is not allowed while a graph is being captured on foo "
                "device ", static_cast<int>(device_));
    // Inside use_mem_pool (on any thread) the device's own cache is kept, as
    // CUDA's allocator keeps it (events are not processed meanwhile); unused
    // private pools are still emptied.
    if (!routings_.empty()) {
      free_whole_segments(lock, /*device_pools=*/false);
      return;
    }
    release_cached_blocks(lock);
  }

  // From now on, allocations that `filter` accepts come from private pool
  // `id` (created, or shared: one more use). The innermost routing wins.
  void begin_allocate_to_pool(c10::MempoolId_t id, std::function<bool(fooStream_t)> filter, bool capture) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const PoolRouting& r : routings_) {
      TORCH_CHECK(r.id != id, "foo: memory pool (", id.first, ", ", id.second, ") of foo device ",
                  static_cast<int>(device_), " is already being allocated to by ",
                  r.capture ? "a graph capture" : "a use_mem_pool", " under way");
    }
    incref_pool(id);
    routings_.push_back({id, std::move(filter), capture});
  }

  // The end of a capture or a use_mem_pool: the pool keeps its memory.
  void end_allocate_to_pool(c10::MempoolId_t id) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = std::find_if(routings_.begin(), routings_.end(), [&](const PoolRouting& r) { return r.id == id; });
    TORCH_INTERNAL_ASSERT(it != routings_.end(), "foo: nothing allocates to pool (", id.first, ", ", id.second, ")");
    bool ended_capture = it->capture;
    routings_.erase(it);
    // Pools released during the capture (free_whole_segments waits for none).
    if (ended_capture && !capture_underway()) free_whole_segments(lock, /*device_pools=*/false);
    if (!routings_.empty()) return;
    for (Block* block : deferred_) {
      block->event_count = 0;
      record_stream_uses(block, nullptr);
    }
    deferred_.clear();
  }

  // A graph using pool `id` is gone. With no user left, the pool's memory
  // is returned once its blocks are free: now for those that are, at a
  // later empty_cache for those that tensors still hold.
  void release_pool(c10::MempoolId_t id) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = pools_.find(id);
    if (it == pools_.end()) return;
    TORCH_INTERNAL_ASSERT(it->second->use_count > 0);
    if (--it->second->use_count > 0) return;
    it->second->use_on_oom = false;
    if (routings_.empty()) {
      release_cached_blocks(lock, /*device_pools=*/false);
    } else if (!capture_underway()) {
      free_whole_segments(lock, /*device_pools=*/false);
    }
  }

  // One more use of pool `id`, created with its first use; mutex_ held.
  PrivatePool& incref_pool(c10::MempoolId_t id) {
    auto [it, created] = pools_.try_emplace(id);
    if (created) {
      it->second = std::make_unique<PrivatePool>(id);
    } else {
      ++it->second->use_count;
    }
    return *it->second;
  }

  bool capture_underway() const {
    return std::any_of(routings_.begin(), routings_.end(), [](const PoolRouting& r) { return r.capture; });
  }

  // torch.foo.set_per_process_memory_fraction: this process may reserve
  // at most `fraction` of the device's capacity.
  void set_memory_fraction(double fraction) {
    size_t free = 0, total = 0;
    FOO_CHECK(on_device(device_, [&] { return fooMemGetInfo(&free, &total); }));
    std::lock_guard<std::mutex> lock(mutex_);
    fraction_ = fraction;
    allowed_bytes_ = static_cast<size_t>(fraction * static_cast<double>(total));
  }

  double memory_fraction() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fraction_;
  }

  void create_or_incref_pool(c10::MempoolId_t id, bool use_on_oom, bool no_split) {
    std::lock_guard<std::mutex> lock(mutex_);
    PrivatePool& pool = incref_pool(id);
    pool.use_on_oom = pool.use_on_oom || use_on_oom;
    pool.small.no_split = pool.small.no_split || no_split;
    pool.large.no_split = pool.large.no_split || no_split;
  }

  int pool_use_count(c10::MempoolId_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(id);
    return it == pools_.end() ? 0 : it->second->use_count;
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats copy = stats_;
    copy.max_split_size = static_cast<int64_t>(max_split_size() == SIZE_MAX ? -1 : max_split_size());
    return copy;
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(mutex_);
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

  // The segments with their blocks, and the trace, as a snapshot reports them.
  void snapshot(std::vector<SegmentInfo>& segments, std::vector<TraceEntry>& trace) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Querying events during a capture would invalidate it (as malloc, the
    // snapshot then shows pending frees as they are).
    if (routings_.empty()) process_events();
    for (auto& [address, segment] : segments_) {
      SegmentInfo info;
      info.device = device_;
      info.address = address;
      info.total_size = segment.size;
      info.stream = segment.stream;
      info.is_large = !segment.pool->is_small;
      info.owner_private_pool_id = segment.pool->owner;
      info.context_when_allocated = segment.context;
      for (Block* b = segment.first; b != nullptr; b = b->next) {
        BlockInfo block;
        block.size = b->size;
        block.requested_size = b->allocated ? b->requested_size : 0;
        block.allocated = b->allocated;
        block.active = b->allocated || b->event_count > 0;
        block.context_when_allocated = b->context;
        if (block.allocated) {
          info.allocated_size += b->size;
          info.requested_size += b->requested_size;
        }
        if (block.active) info.active_size += b->size;
        info.blocks.push_back(std::move(block));
      }
      segments.push_back(std::move(info));
    }
    trace = trace_.entries();
  }

  void clear_trace() {
    std::lock_guard<std::mutex> lock(mutex_);
    trace_.clear();
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (StatArray* a : stat_arrays()) {
      for (Stat& s : *a) s.reset_peak();
    }
    stats_.oversize_allocations.reset_peak();
    stats_.oversize_segments.reset_peak();
  }

 private:
  // torch.profiler(profile_memory=True) records allocations and frees
  // through this, as it does CUDA's; a thread-local lookup when it is off.
  void report_to_profiler(void* ptr, int64_t bytes) noexcept {
    if (!c10::memoryProfilingEnabled()) return;
    const size_t agg = static_cast<size_t>(StatType::AGGREGATE);
    try {
      c10::reportMemoryUsageToProfiler(ptr, bytes, static_cast<size_t>(stats_.allocated_bytes[agg].current),
                                       static_cast<size_t>(stats_.reserved_bytes[agg].current),
                                       c10::Device(c10::DeviceType::PrivateUse1, device_));
    } catch (...) {
      // The profiler's bookkeeping must not fail an allocation or a free.
    }
  }

  // The pool an allocation of `size` bytes on `stream` comes from: the
  // private pool of the innermost routing that takes it, else the device's.
  BlockPool& pool_for(fooStream_t stream, size_t size) {
    bool small = size <= kSmallSize;
    for (auto r = routings_.rbegin(); r != routings_.rend(); ++r) {
      if (r->filter(stream)) {
        PrivatePool& pool = *pools_.at(r->id);
        return small ? pool.small : pool.large;
      }
    }
    return small ? small_ : large_;
  }

  // A free block of a use_on_oom pool for a request the device could not
  // serve; it stays that pool's, and goes back to it when freed.
  Block* take_from_use_on_oom_pools(fooStream_t stream, size_t size, bool small) {
    for (auto& [id, pool] : pools_) {
      if (!pool->use_on_oom) continue;
      if (Block* block = take_free_block(small ? pool->small : pool->large, stream, size)) return block;
    }
    return nullptr;
  }

  void update_reserved(const BlockPool& pool, int64_t bytes) {
    update(stats_.reserved_bytes, pool.is_small, bytes);
    if (pool.owner != c10::MempoolId_t{0, 0}) update(stats_.reserved_bytes_by_private_pools[pool.owner], pool.is_small, bytes);
  }

  static size_t max_split_size() { return c10::CachingAllocator::AcceleratorAllocatorConfig::max_split_size(); }

  std::vector<StatArray*> stat_arrays() {
    return {&stats_.allocation,      &stats_.segment,        &stats_.active,        &stats_.inactive_split,
            &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes,
            &stats_.requested_bytes};
  }

  Block* take_free_block(BlockPool& pool, fooStream_t stream, size_t size) {
    Block key(device_, stream, size, &pool, nullptr);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    // Oversize blocks are kept for oversize requests, and not wasted on a
    // request much smaller than they are.
    if (size < max_split_size() && (*it)->size >= max_split_size()) return nullptr;
    if (size >= max_split_size() && (*it)->size >= size + kLargeBuffer) return nullptr;
    Block* block = *it;
    pool.blocks.erase(it);
    count_inactive_split(block, -1);
    return block;
  }

  // CUDA's inactive_split statistics: free blocks (pooled or parked) cut
  // from a segment that other blocks share.
  void count_inactive_split(const Block* block, int sign) {
    if (!block->is_split()) return;
    bool small = block->pool->is_small;
    update(stats_.inactive_split, small, sign);
    update(stats_.inactive_split_bytes, small, sign * static_cast<int64_t>(block->size));
  }

  Block* new_segment(std::unique_lock<std::mutex>& lock, BlockPool& pool, fooStream_t stream, size_t size,
                     size_t requested, const std::shared_ptr<c10::GatheredContext>& context) {
    size_t bytes = segment_size(size);
    void* ptr = nullptr;
    auto device_malloc = [&] {
      const auto reserved = static_cast<size_t>(stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].current);
      if (reserved + bytes > allowed_bytes_) return fooErrorMemoryAllocation;  // as if the device were full
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
    if (e == fooErrorMemoryAllocation && routings_.empty()) {
      (void)fooGetLastError();
      // Free what the cache holds and try once more, as CUDA's allocator does.
      ++stats_.num_alloc_retries;
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
      ++stats_.num_ooms;
      throw_out_of_memory(lock, requested, stream, context);
    }
    FOO_CHECK(e);
    ++stats_.num_device_alloc;
    update(stats_.segment, pool.is_small, 1);
    update_reserved(pool, static_cast<int64_t>(bytes));
    if (bytes >= max_split_size()) stats_.oversize_segments.increase(1);
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

  // Records the failure (with the state of the cache, which a snapshot
  // taken by an observer shows), tells the observers with the lock
  // released, and raises torch.OutOfMemoryError.
  // `injected`: the fault (FooFaults.h) that made this request fail, if one did.
  [[noreturn]] void throw_out_of_memory(std::unique_lock<std::mutex>& lock, size_t requested, fooStream_t stream,
                                        const std::shared_ptr<c10::GatheredContext>& context,
                                        const std::string& injected = "") {
    size_t free = 0, total = 0;
    on_device(device_, [&] { return fooMemGetInfo(&free, &total); });
    if (history_recording()) {
      // As CUDA's: an oom entry's address field holds the device's free bytes.
      trace_.record(TraceEntry::OOM, device_, reinterpret_cast<void*>(free), requested, stream, context);
    }
    const size_t agg = static_cast<size_t>(StatType::AGGREGATE);
    auto allocated = static_cast<uint64_t>(stats_.allocated_bytes[agg].current);
    auto reserved = static_cast<uint64_t>(stats_.reserved_bytes[agg].current);
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
                     " is reserved by PyTorch but unallocated. ",
                     injected.empty() ? std::string("Set FOO_SIM_DEVICE_MEMORY for a larger device, or call "
                                                    "torch.foo.empty_cache() to release cached memory.")
                                      : "This failure was injected by the fault " + injected + ".");
  }

  bool should_split(const Block* block, size_t size) const {
    if (block->pool->no_split) return false;
    size_t remaining = block->size - size;
    if (block->pool->is_small) return remaining >= kMinBlockSize;
    return size < max_split_size() && remaining > kSmallSize;
  }

  // Cuts `block` to `size` and puts the rest back in its pool.
  Block* split(Block* block, size_t size) {
    auto* rest = new Block(device_, block->stream, block->size - size, block->pool,
                           static_cast<char*>(block->ptr) + size, block->segment);
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    block->pool->blocks.insert(rest);
    count_inactive_split(rest, +1);
    return block;
  }

  // The end of a free: recorded, then the block goes back to its pool.
  void complete_free(Block* block, std::shared_ptr<c10::GatheredContext> context) {
    if (history_recording()) {
      trace_.record(TraceEntry::FREE_COMPLETED, device_, block->ptr, block->requested_size, block->stream,
                    context ? std::move(context) : block->context);
    }
    block->context.reset();
    release_to_pool(block);
  }

  // A block nobody uses any more: parked for the next request of its size
  // on its stream, or merged with its free neighbours and pooled.
  void release_to_pool(Block* block) {
    bool small = block->pool->is_small;
    update(stats_.active, small, -1);
    update(stats_.active_bytes, small, -static_cast<int64_t>(block->size));
    if (block->pool == &small_ && !history_recording()) {
      // Parked before the oldest is returned to the pool: merging that one
      // must not absorb this block, its neighbour perhaps.
      block->parked = true;
      parked_.push_back(block);
      count_inactive_split(block, +1);
      if (parked_.size() > kParkedBlocks) unpark(parked_.front());
      return;
    }
    merge_and_pool(block);
  }

  // Small tensors freed and allocated again at once (temporaries of a
  // training step, a loop's scratch tensors) skip the pool's ordered set and
  // the split and merge they would cost: the block freed last of a size is
  // handed back as it is. Any other request first returns every parked block
  // to its pool, so what the pool finds, splits and merges is unchanged.
  Block* take_parked(fooStream_t stream, size_t size) {
    for (auto it = parked_.rbegin(); it != parked_.rend(); ++it) {
      Block* block = *it;
      if (block->stream != stream || block->size != size) continue;
      parked_.erase(std::next(it).base());
      block->parked = false;
      count_inactive_split(block, -1);
      return block;
    }
    return nullptr;
  }

  void unpark(Block* block) {
    parked_.erase(std::find(parked_.begin(), parked_.end(), block));
    block->parked = false;
    count_inactive_split(block, -1);
    merge_and_pool(block);
  }

  void unpark_all() {
    while (!parked_.empty()) unpark(parked_.back());
  }

  void merge_and_pool(Block* block) {
    for (Block* neighbour : {block->prev, block->next}) {
      if (neighbour == nullptr || neighbour->allocated || neighbour->parked || neighbour->event_count > 0) continue;
      block->pool->blocks.erase(neighbour);
      count_inactive_split(neighbour, -1);
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
    count_inactive_split(block, +1);
  }

  // Frees the blocks whose other-stream users have finished.
  void process_events() {
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

  // Returns every free whole segment to foo_sim, after waiting for the
  // blocks still waiting on other streams. The waits (for those streams,
  // and fooFree's for the device) happen with the lock released, so other
  // threads keep allocating meanwhile.
  // With `device_pools` false, only unused private pools are emptied.
  void release_cached_blocks(std::unique_lock<std::mutex>& lock, bool device_pools = true) {
    std::vector<std::shared_ptr<FooEvent>> waits;
    for (auto& [event, block] : pending_) waits.push_back(event);
    lock.unlock();
    for (auto& event : waits) event->synchronize();
    lock.lock();
    process_events();
    unpark_all();  // after the wait: frees made meanwhile may have parked blocks
    free_whole_segments(lock, device_pools);
  }

  // Returns the free whole segments of the device's own pools (device_pools)
  // and of the private pools nobody uses, without waiting for events: also
  // while a use_mem_pool is under way (not during a graph capture, whose
  // mode may forbid fooFree).
  void free_whole_segments(std::unique_lock<std::mutex>& lock, bool device_pools) {
    std::vector<Block*> segments;
    std::vector<BlockPool*> releasable;
    if (device_pools) releasable = {&small_, &large_};
    for (auto& [id, pool] : pools_) {
      if (pool->use_count == 0) releasable.insert(releasable.end(), {&pool->small, &pool->large});
    }
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
        ++stats_.num_device_free;
        update(stats_.segment, pool->is_small, -1);
        update_reserved(*pool, -static_cast<int64_t>(block->size));
        if (block->size >= max_split_size()) stats_.oversize_segments.decrease(1);
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

  // Unused private pools whose memory is all returned are forgotten.
  void erase_empty_private_pools() {
    for (auto it = pools_.begin(); it != pools_.end();) {
      const PrivatePool& pool = *it->second;
      bool holds_memory = std::any_of(segments_.begin(), segments_.end(), [&](const auto& entry) {
        return entry.second.pool == &pool.small || entry.second.pool == &pool.large;
      });
      it = pool.use_count == 0 && !holds_memory ? pools_.erase(it) : std::next(it);
    }
  }

  const c10::DeviceIndex device_;
  std::mutex mutex_;
  double fraction_ = 1.0;
  size_t allowed_bytes_ = SIZE_MAX;  // no limit until a fraction is set
  BlockPool small_;
  BlockPool large_;
  std::map<c10::MempoolId_t, std::unique_ptr<PrivatePool>> pools_;
  // Captures under way on this device, each with its pool and the streams it allocates for.
  std::vector<PoolRouting> routings_;  // innermost last
  std::vector<Block*> deferred_;  // frees whose stream uses wait for the captures to end
  static constexpr size_t kParkedBlocks = 8;
  std::vector<Block*> parked_;  // freed small blocks, oldest first (release_to_pool)
  std::deque<std::pair<std::shared_ptr<FooEvent>, Block*>> pending_;
  DeviceStats stats_;
  std::map<uintptr_t, Segment> segments_;  // by address, for snapshots
  TraceRing trace_;
};

void raw_delete(void* ptr);

class FooDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    auto device = current_device();
    if (size == 0) return {nullptr, nullptr, &raw_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
    // As CUDA's allocator: larger requests (a negative size among them)
    // would overflow the rounding below.
    constexpr size_t kOneExaByte = size_t{1} << 60;
    TORCH_CHECK_WITH(OutOfMemoryError, size < kOneExaByte, "foo out of memory. Tried to allocate more than 1EB memory.");
    lazy_init();
    fooStream_t stream = getCurrentFooStream(device).stream();
    Block* block = cache(device).malloc(size, stream);
    // Race detector (foo_race.h): handing the block to `stream` is a write
    // of its next launch, so reuse after a free not ordered with an earlier
    // use on another stream (no record_stream) is reported.
    fooRaceDeclareAllocation(block->ptr, size, stream);
    // The context is the block itself: frees and record_stream need no lookup.
    return {block->ptr, block, &raw_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &raw_delete; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    FOO_CHECK(fooMemcpy(dest, src, count, fooMemcpyDeviceToDevice));
  }

  bool initialized() override { return is_initialized(); }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      if (caches_[d]) caches_[d]->empty_cache();
    }
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (!ptr.get() || ptr.get_deleter() != &raw_delete) return;  // empty, or not ours
    FooStream foo_stream(stream);
    check_device_index(foo_stream.device_index());
    auto* block = static_cast<Block*>(ptr.get_context());
    cache(block->device).record_stream(block, foo_stream);
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override { return cache(device).stats(); }

  DeviceCache& device_cache(c10::DeviceIndex device) { return cache(device); }

  MemorySnapshot snapshot() {
    MemorySnapshot result;
    result.device_traces.resize(is_initialized() ? device_count() : 0);
    for (c10::DeviceIndex d = 0; d < static_cast<c10::DeviceIndex>(result.device_traces.size()); ++d) {
      cache(d).snapshot(result.segments, result.device_traces[d]);
    }
    return result;
  }

  void clear_traces() {
    if (!is_initialized()) return;
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) cache(d).clear_trace();
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override { cache(device).reset_accumulated(); }

  void resetPeakStats(c10::DeviceIndex device) override { cache(device).reset_peak(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    size_t free = 0, total = 0;
    FOO_CHECK(on_device(device, [&] { return fooMemGetInfo(&free, &total); }));
    return {free, total};
  }

  // Called by deleters: never throws.
  void free(Block* block) noexcept {
    // A child forked after initialization cannot reach the device; its
    // copies of the parent's blocks are simply dropped.
    if (in_bad_fork()) return;
    fooRaceNoteFree(block->ptr, block->requested_size);  // race detector: later races here are uses after free
    caches_[block->device]->free(block);  // the block's cache exists: it made the block
  }

 private:
  DeviceCache& cache(c10::DeviceIndex device) {
    check_device_index(device);
    std::call_once(created_[device], [&] { caches_[device] = std::make_unique<DeviceCache>(device); });
    return *caches_[device];
  }

  static constexpr int kMaxDevices = FOO_SIM_MAX_DEVICES;
  std::once_flag created_[kMaxDevices];
  std::unique_ptr<DeviceCache> caches_[kMaxDevices];
};

FooDeviceAllocator g_allocator;

void raw_delete(void* ctx) {
  if (ctx != nullptr) g_allocator.free(static_cast<Block*>(ctx));
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace

c10::DeviceAllocator* getFooDeviceAllocator() { return &g_allocator; }

void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(fooStream_t)> filter) {
  g_allocator.device_cache(device).begin_allocate_to_pool(id, std::move(filter), /*capture=*/true);
}

void begin_allocate_current_thread_to_pool(c10::DeviceIndex device, c10::MempoolId_t id) {
  // The filter runs on the allocating thread, whatever the stream.
  g_allocator.device_cache(device).begin_allocate_to_pool(
      id, [owner = std::this_thread::get_id()](fooStream_t) { return std::this_thread::get_id() == owner; },
      /*capture=*/false);
}

void end_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id) {
  g_allocator.device_cache(device).end_allocate_to_pool(id);
}

void release_pool(c10::DeviceIndex device, c10::MempoolId_t id) { g_allocator.device_cache(device).release_pool(id); }

void create_or_incref_pool(c10::DeviceIndex device, c10::MempoolId_t id, bool use_on_oom, bool no_split) {
  g_allocator.device_cache(device).create_or_incref_pool(id, use_on_oom, no_split);
}


void set_memory_fraction(c10::DeviceIndex device, double fraction) {
  TORCH_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction, ". Allowed range: 0~1");
  g_allocator.device_cache(device).set_memory_fraction(fraction);
}

double memory_fraction(c10::DeviceIndex device) { return g_allocator.device_cache(device).memory_fraction(); }

int pool_use_count(c10::DeviceIndex device, c10::MempoolId_t id) {
  return g_allocator.device_cache(device).pool_use_count(id);
}

c10::MempoolId_t graph_private_pool_id() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {next.fetch_add(1), 0};
}

c10::MempoolId_t graph_pool_handle() {
  static std::atomic<c10::CaptureId_t> next{1};
  return {0, next.fetch_add(1)};
}

MemorySnapshot memory_snapshot() { return g_allocator.snapshot(); }

void record_memory_history(const HistoryOptions& options) {
  set_history_options(options);
  // Turning recording off or clearing it drops the recorded entries (and
  // the stacks they hold) now, not at each device's next allocation.
  if (!options.enabled || options.clear_history) g_allocator.clear_traces();
}


}  // namespace foo
