#include "runtime/FooAllocatorParking.h"

#include <algorithm>
#include <iterator>

namespace foo::caching_allocator {

Block* ParkedBlocks::take(fooStream_t stream, size_t size) {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    Block* block = *it;
    if (block->stream != stream || block->size != size) continue;
    blocks_.erase(std::next(it).base());
    block->parked = false;
    return block;
  }
  return nullptr;
}

void ParkedBlocks::park(Block* block) {
  block->parked = true;
  blocks_.push_back(block);
}

void ParkedBlocks::unpark(Block* block) {
  blocks_.erase(std::find(blocks_.begin(), blocks_.end(), block));
  block->parked = false;
}

}  // namespace foo::caching_allocator
