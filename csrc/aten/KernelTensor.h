// What a kernel knows of its tensor arguments, captured when the operator
// is called. Kernels run later, on an executor thread:
//  - foo tensors travel by address, layout and dtype (KernelTensor).
//    Kernels never own foo memory: as on a GPU, the host may free a tensor
//    while work that uses it is still queued, and the caching allocator
//    reuses the memory in stream order (or after Tensor.record_stream's work).
//  - CPU tensors (0-dim scalars, CPU index tensors) travel by value
//    (CarriedTensor): the host may change or free them as soon as the
//    operator returns, as CUDA copies them into the launch.
#pragma once

#include <optional>

#include <ATen/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

namespace foo::aten {

class KernelTensor {
 public:
  explicit KernelTensor(const at::Tensor& t);
  // A CPU tensor over the same memory; only valid inside the kernel (or on
  // the host once the stream that writes it has been synchronized).
  at::Tensor cpu() const;

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

// A 0-dim CPU tensor (a Python number made into a tensor for one call, or a
// CPU scalar the caller made) carried by value, as CUDA passes such a value
// in the kernel's arguments. The kernel makes its own tensor of it on the
// executor, so the host frees the caller's tensor at the end of the call
// instead of after the kernel has run: a freshly freed block is the one the
// host's next call allocates, where one freed thousands of launches later
// goes through glibc's bins (measured on the small-op chain: a third of a
// microsecond per launch, 2.52 to 2.19).
class ScalarArgument {
 public:
  // nullopt for a tensor that is not a plain 0-dim CPU value (a view with a
  // lazy conjugation, a dtype c10::Scalar cannot hold exactly).
  static std::optional<ScalarArgument> of(const at::Tensor& t);
  at::Tensor tensor() const;

 private:
  ScalarArgument(c10::Scalar value, c10::ScalarType dtype, bool wrapped)
      : value_(value), dtype_(dtype), wrapped_(wrapped) {}
  c10::Scalar value_;
  c10::ScalarType dtype_;
  bool wrapped_;  // a Python number: type promotion treats it as one
};

// A tensor argument as a kernel carries it: foo tensors by address, 0-dim
// CPU tensors by value, other CPU tensors by a copy taken now, undefined
// ones as undefined.
class CarriedTensor {
 public:
  CarriedTensor() = default;  // an undefined tensor
  explicit CarriedTensor(const at::Tensor& t);
  at::Tensor get() const {
    if (foo_) return foo_->cpu();
    if (scalar_) return scalar_->tensor();
    return host_;
  }

 private:
  std::optional<KernelTensor> foo_;
  std::optional<ScalarArgument> scalar_;
  at::Tensor host_;
};

// The value of a CPU tensor as of now, for a kernel that runs later.
at::Tensor capture_host_tensor(const at::Tensor& t);

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
