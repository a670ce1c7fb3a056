// Storage-level operations on foo memory.
#pragma once

#include <c10/core/StorageImpl.h>

namespace foo {

// Resizes a foo storage to `size_bytes`, keeping the leading bytes: the copy
// is queued on the current stream of the storage's device.
void resize_bytes(c10::StorageImpl* storage, size_t size_bytes);

}  // namespace foo
