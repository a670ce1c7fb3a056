// User memory pools: torch.foo.MemPool and torch.foo.use_mem_pool, as
// c10::cuda::MemPool and torch.cuda.use_mem_pool.
//
// A pool is one of the caching allocator's private pools (the kind a graph
// capture fills), owned here instead of by a graph. While a thread is inside
// use_mem_pool (begin_allocate_current_thread_to_pool), that thread's
// allocations on the device come from the pool; blocks freed there stay in
// it, for its next allocations only.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Allocator.h>

namespace foo {

class FooMemPool {
 public:
  // A new pool on the current foo device, held once by this object
  // (create_or_incref_pool in FooCachingAllocator.h says what the options do).
  FooMemPool(bool use_on_oom, bool no_split);
  // One use less, then the pool's cache emptied, as c10::cuda::MemPool's
  // end: with no use left, the pool's free segments go back to the device
  // (at once, or when a graph capture under way on the device ends), and
  // those that tensors still hold at an empty_cache after they are freed.
  ~FooMemPool();
  FooMemPool(const FooMemPool&) = delete;
  FooMemPool& operator=(const FooMemPool&) = delete;

  c10::MempoolId_t id() const { return id_; }
  c10::DeviceIndex device() const { return device_; }
  // This object's hold plus one per use_mem_pool under way.
  int use_count() const;

 private:
  c10::MempoolId_t id_;
  c10::DeviceIndex device_;
};

}  // namespace foo
