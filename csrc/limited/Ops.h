// The Python layer's bindings as dispatcher operators, torch.ops._foo_C.*,
// for a build of torch_foo whose extension uses only Python's Limited API
// (docs/limited-api.md). torch's operator calls convert the arguments
// (Stream, Generator, Tensor, lists, dictionaries) and release the GIL.
#pragma once

#include <cstdint>

#include <c10/core/Device.h>

namespace foo::limited {

// A Python int as a foo device index: one outside c10::DeviceIndex's range
// is an invalid index, not a truncated one.
c10::DeviceIndex device_index(int64_t d);

}  // namespace foo::limited
