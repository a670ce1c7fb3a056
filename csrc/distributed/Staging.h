// Pinned host staging buffers for the foo collectives whose foo memory gloo
// cannot work on directly (a layout or dtype to convert, an overlap):
// filled and drained by asynchronous copies on the backend's internal stream.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/FooStream.h"

namespace foo::distributed {

// A pinned CPU tensor from foo's host allocator, with `like`'s sizes and
// strides (so that a dense foo tensor copies into it byte for byte).
at::Tensor pinned_like(const at::Tensor& like);
// A contiguous pinned CPU tensor of `numel` elements of `dtype`.
at::Tensor pinned_flat(int64_t numel, at::ScalarType dtype);

// Hands `buffers` back to the host allocator in stream order: no block is
// given out again before `stream` has passed the work queued on it so far.
void release_after(const std::vector<at::Tensor>& buffers, const FooStream& stream);

// What a kernel needs to see a staging buffer, or foo memory gloo works on
// in place, as a CPU tensor: its address and shape, not the tensor (the
// kernel must never own, and so free, the memory).
struct HostView {
  void* data;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  at::ScalarType dtype;

  explicit HostView(const at::Tensor& t);
  at::Tensor tensor() const;
  // The bytes from the first element to the end of the last.
  size_t bytes() const;
};

}  // namespace foo::distributed
