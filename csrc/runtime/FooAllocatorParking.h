// Parked blocks: small tensors freed and allocated again at once
// (temporaries of a training step, a loop's scratch tensors) skip the
// pool's ordered set and the split and merge they would cost. A freed small
// block is parked as it is, and the block parked last of a size on a stream
// is what the next request of that size there gets. Any other request
// first returns every parked block to its pool (DeviceCachingAllocator), so
// what the pool finds, splits and merges is unchanged. Guarded by the owning
// DeviceCachingAllocator's mutex.
#pragma once

#include <cstddef>
#include <vector>

#include <foo_sim/foo_runtime.h>

#include "runtime/FooAllocatorBlocks.h"

namespace foo::caching_allocator {

class ParkedBlocks {
 public:
  // How many blocks stay parked: parking one more unparks the oldest.
  static constexpr size_t kCapacity = 8;

  // The block parked last of `size` on `stream`, no longer parked; nullptr
  // if there is none.
  Block* take(fooStream_t stream, size_t size);
  void park(Block* block);
  // Takes `block` out of the parked blocks.
  void unpark(Block* block);

  bool over_capacity() const { return blocks_.size() > kCapacity; }
  bool empty() const { return blocks_.empty(); }
  Block* oldest() const { return blocks_.front(); }
  Block* newest() const { return blocks_.back(); }

 private:
  std::vector<Block*> blocks_;  // oldest first
};

}  // namespace foo::caching_allocator
