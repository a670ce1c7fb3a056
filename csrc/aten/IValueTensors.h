// Walking the tensors inside a boxed operator argument (a tensor, a list of
// tensors, a list of optional tensors): the fallbacks' way of moving a call
// between foo and the CPU.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

namespace foo::aten {

template <class F>
void for_each_tensor(const c10::IValue& v, F&& fn) {
  if (v.isTensor()) {
    fn(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) fn(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) for_each_tensor(e, fn);
  }
}

// A copy of `v` with every defined foo tensor mapped by `on_foo`, every
// defined CPU tensor by `on_cpu`, and every foo device replaced by `device`.
// One pass decides by each tensor's own device: once mapped, a CPU alias of
// foo memory looks like any CPU tensor.
template <class F, class G>
c10::IValue map_tensors(const c10::IValue& v, const F& on_foo, const G& on_cpu, c10::Device device) {
  auto map = [&](const at::Tensor& t) -> at::Tensor {
    if (!t.defined()) return t;
    if (t.device().is_privateuseone()) return on_foo(t);
    return t.is_cpu() ? on_cpu(t) : t;
  };
  if (v.isTensor()) return map(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(map(t));
    return out;
  }
  if (v.isList()) {
    auto list = v.toList();
    c10::impl::GenericList out(list.elementType());
    for (const c10::IValue& e : list) out.push_back(map_tensors(e, on_foo, on_cpu, device));
    return out;
  }
  if (v.isDevice() && v.toDevice().is_privateuseone()) return device;
  return v;
}

inline at::Tensor unchanged(const at::Tensor& t) { return t; }

}  // namespace foo::aten
