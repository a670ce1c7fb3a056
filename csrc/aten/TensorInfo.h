// A foo tensor as a kernel sees it (ATen's cuda::detail::TensorInfo for
// foo): captured when the operator is called, read on an executor thread
// when the kernel runs. It holds the storage's address, layout and dtype,
// never the storage: as on a GPU, the host may free a tensor while work
// that uses it is still queued, and the caching allocator reuses the memory
// in stream order (or after Tensor.record_stream's work).
#pragma once

#include <ATen/Tensor.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

namespace foo::aten {

class TensorInfo {
 public:
  explicit TensorInfo(const at::Tensor& t);
  // A CPU tensor over the same memory; only valid inside the kernel (or on
  // the host once the stream that writes it has been synchronized).
  at::Tensor cpu() const;
  c10::IntArrayRef strides() const { return strides_; }

 private:
  void* storage_base_;  // null when there are no elements
  size_t storage_nbytes_;
  int64_t storage_offset_;
  c10::SmallVector<int64_t, 6> sizes_;
  c10::SmallVector<int64_t, 6> strides_;
  c10::ScalarType dtype_;
  bool conj_;  // lazy conjugation and negation bits travel with the view
  bool neg_;
};

// While alive on a thread (one per kernel run, or per host-side CPU call),
// the CPU aliases made there of one foo storage share one CPU storage, so
// that ATen's overlap checks (`a.copy_(a.t())`, out= aliasing an input) see
// the real aliasing of the foo tensors.
class AliasScope {
 public:
  AliasScope();
  ~AliasScope();
  AliasScope(const AliasScope&) = delete;
  AliasScope& operator=(const AliasScope&) = delete;

  c10::Storage storage_for(void* base, size_t nbytes);

 private:
  c10::SmallVector<c10::Storage, 4> storages_;
  AliasScope* previous_;
};

// A CPU tensor over a foo tensor's memory, made on the host.
at::Tensor cpu_alias(const at::Tensor& t);

}  // namespace foo::aten
