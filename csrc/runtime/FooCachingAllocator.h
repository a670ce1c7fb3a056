// The device memory allocator: a stream-ordered caching allocator in the
// manner of CUDA's, registered for PrivateUse1 as a c10::DeviceAllocator.
//
// A freed block goes back to the pool of the stream it was allocated on and
// is reused at once by work on that stream (stream order makes it safe).
// Tensor.record_stream(s) adds s as a user: the block is then reused only
// after the work queued on s up to its free has finished. Requests are
// rounded to 512 bytes; small ones (<= 1 MiB) are carved out of 2 MiB
// segments, larger ones out of 20 MiB segments or their own, and big free
// blocks are split, so a training loop reaches a steady state with no new
// device allocations. PYTORCH_ALLOC_CONF=max_split_size_mb:N stops blocks of
// N MiB and more from being split.
//
// Each device has its own DeviceCachingAllocator (FooDeviceCachingAllocator.h,
// which lists the pieces it is made of); this file registers them.
#pragma once

#include <functional>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooMemoryHistory.h"

namespace foo {

c10::DeviceAllocator* getFooDeviceAllocator();

// torch.foo.set_per_process_memory_fraction: from now on this process may
// reserve at most `fraction` (0 to 1) of `device`'s capacity; a request
// beyond it raises torch.OutOfMemoryError, as a full device would.
void set_memory_fraction(c10::DeviceIndex device, double fraction);
double memory_fraction(c10::DeviceIndex device);

// Private memory pools, as CUDA's allocator has them, for graph capture and
// torch.foo.MemPool. Between begin and end, allocations on `device` made on
// a stream that `filter` accepts (a capture's) or by the calling thread
// (use_mem_pool's) come from pool `id` (created on first use; each begin is
// one more use of it); blocks freed there stay in the pool. release_pool
// drops one use and never waits: a pool with no use left gives its free
// segments back at the next empty_cache, as CUDA's graph pools do, or at
// once with empty_pool (a MemPool's end, as CUDA's emptyCache(id)).
void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(fooStream_t)> filter);
void begin_allocate_current_thread_to_pool(c10::DeviceIndex device, c10::MempoolId_t id);
void end_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id);
void release_pool(c10::DeviceIndex device, c10::MempoolId_t id);
void empty_pool(c10::DeviceIndex device, c10::MempoolId_t id);
int pool_use_count(c10::DeviceIndex device, c10::MempoolId_t id);
// One more use of pool `id` on `device`, created if it is new: a user pool
// (FooMemPool.h) is held by its owner before any allocation routes to it.
// use_on_oom: while held, its free blocks serve requests outside it that the
// device cannot; no_split: a request takes a whole free block of it.
void create_or_incref_pool(c10::DeviceIndex device, c10::MempoolId_t id, bool use_on_oom, bool no_split);
// Fresh pool ids: {n, 0} for a graph's own pool, {0, n} for one that the
// user shares between graphs (torch.foo.graph_pool_handle()).
c10::MempoolId_t graph_private_pool_id();
c10::MempoolId_t graph_pool_handle();

// The allocator's state for torch.foo.memory._snapshot(): every segment of
// every device with its blocks (in address order), and each device's
// recorded trace (oldest first; see FooMemoryHistory.h for what is recorded).
struct MemorySnapshot {
  std::vector<SegmentInfo> segments;
  std::vector<std::vector<TraceEntry>> device_traces;  // indexed by device
};

MemorySnapshot memory_snapshot();

// torch.foo.memory._record_memory_history: the options for what to record
// from now on (see FooMemoryHistory.h).
void record_memory_history(const HistoryOptions& options);

}  // namespace foo
