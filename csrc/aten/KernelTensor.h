// What a kernel knows of a foo tensor: its address, layout and dtype, by
// value. Kernels never own Tensors: as on a GPU, the host may free a tensor
// while work that uses it is still queued, and the caching allocator reuses
// the memory in stream order (or after Tensor.record_stream's work).
#pragma once

#include <ATen/Tensor.h>
#include <c10/util/SmallVector.h>

namespace foo::aten {

class KernelTensor {
 public:
  explicit KernelTensor(const at::Tensor& t);
  // A CPU tensor over the same memory; only valid inside the kernel.
  at::Tensor cpu() const;

 private:
  void* data_;
  c10::SmallVector<int64_t, 6> sizes_;
  c10::SmallVector<int64_t, 6> strides_;
  c10::ScalarType dtype_;
  bool conj_;  // lazy conjugation and negation bits travel with the view
  bool neg_;
};

// A CPU tensor over a foo tensor's memory, for use on the host after the
// stream that writes it has been synchronized (or for views, which read no data).
at::Tensor cpu_alias(const at::Tensor& t);

}  // namespace foo::aten
