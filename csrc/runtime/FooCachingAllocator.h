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
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace foo {

c10::DeviceAllocator* getFooDeviceAllocator();

}  // namespace foo
