// Device memory handed out by address, as torch.cuda.caching_allocator_alloc
// and caching_allocator_delete do (CUDACachingAllocator's
// raw_alloc_with_stream and raw_delete): blocks of the caching allocator,
// taken on a given stream and held here until deleted.
#pragma once

#include <cstddef>

#include <c10/core/Stream.h>

namespace foo {

// A block of `nbytes` for work on `stream` (nullptr for 0 bytes, as CUDA's).
void* raw_alloc_with_stream(size_t nbytes, c10::Stream stream);
// Gives back a block raw_alloc_with_stream returned; anything else is an error.
void raw_delete(void* ptr);

}  // namespace foo
