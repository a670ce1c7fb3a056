#include "runtime/FooAllocatorSnapshot.h"

namespace foo::caching_allocator {

void append_segment_infos(c10::DeviceIndex device, const std::map<uintptr_t, Segment>& segments,
                          std::vector<c10::CachingDeviceAllocator::SegmentInfo>& out) {
  for (const auto& [address, segment] : segments) {
    c10::CachingDeviceAllocator::SegmentInfo info;
    info.device = device;
    info.address = address;
    info.total_size = segment.size;
    info.stream = segment.stream;
    info.is_large = !segment.pool->is_small;
    info.owner_private_pool_id = segment.pool->owner;
    info.context_when_allocated = segment.context;
    for (Block* b = segment.first; b != nullptr; b = b->next) {
      c10::CachingDeviceAllocator::BlockInfo block;
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
    out.push_back(std::move(info));
  }
}

}  // namespace foo::caching_allocator
