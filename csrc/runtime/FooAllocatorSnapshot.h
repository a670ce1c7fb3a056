// What torch.foo.memory._snapshot() shows of one device's segments: each
// with its blocks, in address order, in c10's SegmentInfo form.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#include "runtime/FooAllocatorBlocks.h"

namespace foo::caching_allocator {

// Appends the segments of `device` (by address) to `out`.
void append_segment_infos(c10::DeviceIndex device, const std::map<uintptr_t, Segment>& segments,
                          std::vector<c10::CachingDeviceAllocator::SegmentInfo>& out);

}  // namespace foo::caching_allocator
