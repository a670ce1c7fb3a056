// Pinned host memory for foo: ATen's CachingHostAllocatorImpl over
// fooMallocHost, registered for PrivateUse1. A block used by a queued
// asynchronous copy (recorded with record_event) is not handed out again
// before that copy has finished.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace foo {

at::HostAllocator* getFooHostAllocator();
bool is_pinned_ptr(const void* ptr);

}  // namespace foo
