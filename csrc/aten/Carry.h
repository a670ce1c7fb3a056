// How each kind of operator argument is carried from the call into a
// kernel that runs later (Carry<T>::keep at the call, Carry<T>::give in the
// kernel): values by copy, foo tensors by address, CPU tensors by value.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/IListRef.h>

#include "aten/KernelTensor.h"

namespace foo::aten {

template <class T>
struct Carry {  // plain values (Scalar, int64_t, bool, optional<ScalarType>, ...): copied
  using Stored = std::decay_t<T>;
  static Stored keep(const T& v) { return v; }
  static const Stored& give(const Stored& v) { return v; }
};

template <>
struct Carry<const at::Tensor&> {
  using Stored = CarriedTensor;
  static Stored keep(const at::Tensor& t) { return CarriedTensor(t); }
  static at::Tensor give(const Stored& s) { return s.get(); }
};

template <>
struct Carry<const std::optional<at::Tensor>&> {
  using Stored = std::optional<CarriedTensor>;
  static Stored keep(const std::optional<at::Tensor>& t) {
    return t.has_value() && t->defined() ? Stored(CarriedTensor(*t)) : std::nullopt;
  }
  static std::optional<at::Tensor> give(const Stored& s) {
    return s ? std::optional<at::Tensor>(s->get()) : std::nullopt;
  }
};

template <>
struct Carry<at::IntArrayRef> {
  using Stored = std::vector<int64_t>;
  static Stored keep(at::IntArrayRef v) { return v.vec(); }
  static at::IntArrayRef give(const Stored& v) { return v; }
};

template <>
struct Carry<at::OptionalIntArrayRef> {
  using Stored = std::optional<std::vector<int64_t>>;
  static Stored keep(at::OptionalIntArrayRef v) { return v ? Stored(v->vec()) : std::nullopt; }
  static at::OptionalIntArrayRef give(const Stored& v) { return v ? at::OptionalIntArrayRef(*v) : std::nullopt; }
};

template <>
struct Carry<const at::ITensorListRef&> {
  using Stored = std::vector<CarriedTensor>;
  static Stored keep(const at::ITensorListRef& list) {
    Stored out;
    for (const at::Tensor& t : list) out.emplace_back(t);
    return out;
  }
  static std::vector<at::Tensor> give(const Stored& s) {
    std::vector<at::Tensor> out;
    out.reserve(s.size());
    for (const auto& t : s) out.push_back(t.get());
    return out;
  }
};

// Index lists (x[i, j]): optional tensors, which may be CPU tensors of any
// shape, as CUDA allows for indices; those are captured by value.
template <>
struct Carry<const c10::List<std::optional<at::Tensor>>&> {
  using Stored = std::vector<std::optional<CarriedTensor>>;
  static Stored keep(const c10::List<std::optional<at::Tensor>>& list) {
    Stored out;
    for (const std::optional<at::Tensor>& t : list) {
      out.push_back(t.has_value() && t->defined() ? std::optional<CarriedTensor>(CarriedTensor(*t)) : std::nullopt);
    }
    return out;
  }
  static c10::List<std::optional<at::Tensor>> give(const Stored& s) {
    c10::List<std::optional<at::Tensor>> out;
    for (const auto& t : s) out.push_back(t ? std::optional<at::Tensor>(t->get()) : std::nullopt);
    return out;
  }
};

template <>
struct Carry<c10::string_view> {
  using Stored = std::string;
  static Stored keep(c10::string_view v) { return std::string(v); }
  static c10::string_view give(const Stored& v) { return v; }
};

template <>
struct Carry<std::optional<c10::string_view>> {
  using Stored = std::optional<std::string>;
  static Stored keep(std::optional<c10::string_view> v) { return v ? Stored(std::string(*v)) : std::nullopt; }
  static std::optional<c10::string_view> give(const Stored& v) {
    return v ? std::optional<c10::string_view>(*v) : std::nullopt;
  }
};

}  // namespace foo::aten
