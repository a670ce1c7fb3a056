// The caching allocator's private pools (CUDA's: a graph's, or a
// torch.foo.MemPool's) and the routings that send allocations to them: while
// a graph is captured, or a thread is inside use_mem_pool, the allocations
// that a routing's filter accepts (by stream, or by thread) come from its
// pool. Guarded by the owning DeviceCachingAllocator's mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <foo_sim/foo_runtime.h>

#include "runtime/FooAllocatorBlocks.h"

namespace foo::caching_allocator {

struct PoolRouting {
  c10::MempoolId_t id;
  std::function<bool(fooStream_t)> filter;
  bool capture;  // a graph capture's, not use_mem_pool's
};

class PrivatePools {
 public:
  explicit PrivatePools(c10::DeviceIndex device) : device_(device) {}

  // From now on, allocations that `filter` accepts are routed to pool `id`
  // (one more use of it, created if new). The innermost routing wins. Pool
  // `id` must not be routed to already.
  void begin_routing(c10::MempoolId_t id, std::function<bool(fooStream_t)> filter, bool capture);
  // Ends the routing to `id`; returns whether it was a capture's.
  bool end_routing(c10::MempoolId_t id);
  bool routing_under_way() const { return !routings_.empty(); }
  bool capture_under_way() const;
  // The pool of the innermost routing that takes an allocation on
  // `stream`, or nullptr.
  PrivatePool* routed_pool(fooStream_t stream) const;

  // One more use of pool `id`, created with its first use.
  PrivatePool& incref(c10::MempoolId_t id);
  // One use less of pool `id`, if it exists: true when that was its last
  // (it then serves no request outside it any more).
  bool decref(c10::MempoolId_t id);
  int use_count(c10::MempoolId_t id) const;

  // The pools whose free blocks serve what the device cannot, in id order.
  std::vector<PrivatePool*> use_on_oom_pools() const;
  // The block pools of the private pools nobody uses, in id order; with
  // `only`, of that pool alone (none if it is used or gone).
  std::vector<BlockPool*> unused_block_pools(std::optional<c10::MempoolId_t> only = std::nullopt) const;
  // Forgets the pools nobody uses that hold no memory any more.
  void erase_unused(const std::function<bool(const PrivatePool&)>& holds_memory);

 private:
  const c10::DeviceIndex device_;
  std::map<c10::MempoolId_t, std::unique_ptr<PrivatePool>> pools_;
  std::vector<PoolRouting> routings_;  // innermost last
};

}  // namespace foo::caching_allocator
