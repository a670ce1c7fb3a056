// Results that the host computed itself, after waiting for the stream
// (operators whose results' sizes depend on the values), put into fresh
// foo tensors.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace foo::aten {

// A new foo tensor on `device` with `cpu`'s sizes, strides and values. The
// host writes it directly when nothing is queued on the device's current
// stream (the block is then free of any queued use: the caching allocator
// hands a block out in stream order, or after the events of the streams
// that recorded it); otherwise, and while the race detector is on, a copy
// on the stream fills it.
at::Tensor foo_tensor_from_host(const at::Tensor& cpu, c10::Device device);

}  // namespace foo::aten
