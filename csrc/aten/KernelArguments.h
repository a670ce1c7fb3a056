// Kernel arguments: how each kind of operator argument is packed into the
// closure of a kernel that runs later (KernelArgument<T>::pack at the call,
// ::unpack in the kernel, on an executor thread), as a CUDA launch copies
// its arguments into the launch:
//  - plain values by copy;
//  - foo tensors by address, layout and dtype (TensorInfo.h);
//  - CPU tensors (0-dim scalars, CPU index tensors) by value: the host may
//    change or free them as soon as the operator returns.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/core/IListRef.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include "aten/TensorInfo.h"

namespace foo::aten {

// A 0-dim CPU tensor (a Python number made into a tensor for one call, or a
// CPU scalar the caller made) packed by value, as CUDA passes a CPU scalar
// in the kernel's arguments. The kernel makes its own tensor of it on the
// executor, so the host frees the caller's tensor at the end of the call
// instead of after the kernel has run: a freshly freed block is the one the
// host's next call allocates, where one freed thousands of launches later
// goes through glibc's bins (docs/internals/launch-cost.md).
class CpuScalar {
 public:
  // nullopt for a tensor that is not a plain 0-dim CPU value (a view with a
  // lazy conjugation, a dtype c10::Scalar cannot hold exactly).
  static std::optional<CpuScalar> of(const at::Tensor& t);
  at::Tensor tensor() const;

 private:
  CpuScalar(c10::Scalar value, c10::ScalarType dtype, bool wrapped) : value_(value), dtype_(dtype), wrapped_(wrapped) {}
  c10::Scalar value_;
  c10::ScalarType dtype_;
  bool wrapped_;  // a Python number: type promotion treats it as one
};

// The value of a CPU tensor as of now, for a kernel that runs later: a
// copy, except for a wrapped number, which nobody else holds.
at::Tensor pack_cpu_tensor(const at::Tensor& t);

// A tensor argument packed for a kernel: foo tensors by TensorInfo, 0-dim
// CPU tensors by value, other CPU tensors by a copy taken now, undefined
// ones as undefined.
class PackedTensor {
 public:
  PackedTensor() = default;  // an undefined tensor
  explicit PackedTensor(const at::Tensor& t);
  at::Tensor unpack() const {
    if (foo_) return foo_->cpu();
    if (scalar_) return scalar_->tensor();
    return host_;
  }

 private:
  std::optional<TensorInfo> foo_;
  std::optional<CpuScalar> scalar_;
  at::Tensor host_;
};

template <class T>
struct KernelArgument {  // plain values (Scalar, int64_t, bool, optional<ScalarType>, ...): copied
  using Packed = std::decay_t<T>;
  static Packed pack(const T& v) { return v; }
  static const Packed& unpack(const Packed& v) { return v; }
};

template <>
struct KernelArgument<const at::Tensor&> {
  using Packed = PackedTensor;
  static Packed pack(const at::Tensor& t) { return PackedTensor(t); }
  static at::Tensor unpack(const Packed& s) { return s.unpack(); }
};

template <>
struct KernelArgument<const std::optional<at::Tensor>&> {
  using Packed = std::optional<PackedTensor>;
  static Packed pack(const std::optional<at::Tensor>& t) {
    return t.has_value() && t->defined() ? Packed(PackedTensor(*t)) : std::nullopt;
  }
  static std::optional<at::Tensor> unpack(const Packed& s) {
    return s ? std::optional<at::Tensor>(s->unpack()) : std::nullopt;
  }
};

template <>
struct KernelArgument<at::IntArrayRef> {
  using Packed = std::vector<int64_t>;
  static Packed pack(at::IntArrayRef v) { return v.vec(); }
  static at::IntArrayRef unpack(const Packed& v) { return v; }
};

template <>
struct KernelArgument<at::OptionalIntArrayRef> {
  using Packed = std::optional<std::vector<int64_t>>;
  static Packed pack(at::OptionalIntArrayRef v) { return v ? Packed(v->vec()) : std::nullopt; }
  static at::OptionalIntArrayRef unpack(const Packed& v) { return v ? at::OptionalIntArrayRef(*v) : std::nullopt; }
};

template <>
struct KernelArgument<const at::ITensorListRef&> {
  using Packed = std::vector<PackedTensor>;
  static Packed pack(const at::ITensorListRef& list) {
    Packed out;
    for (const at::Tensor& t : list) out.emplace_back(t);
    return out;
  }
  static std::vector<at::Tensor> unpack(const Packed& s) {
    std::vector<at::Tensor> out;
    out.reserve(s.size());
    for (const auto& t : s) out.push_back(t.unpack());
    return out;
  }
};

// Index lists (x[i, j]): optional tensors, which may be CPU tensors of any
// shape, as CUDA allows for indices; those are packed by value.
template <>
struct KernelArgument<const c10::List<std::optional<at::Tensor>>&> {
  using Packed = std::vector<std::optional<PackedTensor>>;
  static Packed pack(const c10::List<std::optional<at::Tensor>>& list) {
    Packed out;
    for (const std::optional<at::Tensor>& t : list) {
      out.push_back(t.has_value() && t->defined() ? std::optional<PackedTensor>(PackedTensor(*t)) : std::nullopt);
    }
    return out;
  }
  static c10::List<std::optional<at::Tensor>> unpack(const Packed& s) {
    c10::List<std::optional<at::Tensor>> out;
    for (const auto& t : s) out.push_back(t ? std::optional<at::Tensor>(t->unpack()) : std::nullopt);
    return out;
  }
};

template <>
struct KernelArgument<c10::string_view> {
  using Packed = std::string;
  static Packed pack(c10::string_view v) { return std::string(v); }
  static c10::string_view unpack(const Packed& v) { return v; }
};

template <>
struct KernelArgument<std::optional<c10::string_view>> {
  using Packed = std::optional<std::string>;
  static Packed pack(std::optional<c10::string_view> v) { return v ? Packed(std::string(*v)) : std::nullopt; }
  static std::optional<c10::string_view> unpack(const Packed& v) {
    return v ? std::optional<c10::string_view>(*v) : std::nullopt;
  }
};

}  // namespace foo::aten
