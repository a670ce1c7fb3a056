// Pinned host memory for foo: ATen's CachingHostAllocatorImpl over
// fooMallocHost, registered for PrivateUse1. A block used by a queued
// asynchronous copy (recorded with record_event) is not handed out again
// before that copy has finished.
#pragma once

#include <functional>

#include <ATen/core/CachingHostAllocator.h>

namespace foo {

at::HostAllocator* getFooHostAllocator();
// Graph capture: pinned allocations on streams that `filter` accepts come
// from private pool `id` meanwhile (see FooCachingAllocator.h).
void begin_allocate_host_to_pool(c10::MempoolId_t id, std::function<bool(c10::Stream)> filter);
void end_allocate_host_to_pool(c10::MempoolId_t id);
void release_host_pool(c10::MempoolId_t id);
bool is_pinned_ptr(const void* ptr);

}  // namespace foo
