// The fallback's way for views (FallbackStrategies.h).
#include <optional>

#include "aten/FallbackArguments.h"
#include "aten/FallbackStrategies.h"
#include "aten/IValueTensors.h"
#include "aten/TensorInfo.h"

namespace foo::aten::fallback {
namespace {

using Stack = torch::jit::Stack;
constexpr c10::DeviceType kFoo = c10::DeviceType::PrivateUse1;

// A foo tensor over the storage of whichever foo argument `cpu_view` points into.
at::Tensor foo_view_of(const at::Tensor& cpu_view, const Stack& args) {
  const auto* p = static_cast<const char*>(cpu_view.data_ptr());
  std::optional<at::Tensor> owner;
  for (const c10::IValue& v : args) {
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (owner || !t.defined() || t.device().type() != kFoo) return;
      const auto* base = static_cast<const char*>(t.storage().data());
      if (cpu_view.numel() == 0 || (p >= base && p < base + t.storage().nbytes())) owner = t;
    });
  }
  TORCH_INTERNAL_ASSERT(owner.has_value(), "foo fallback: a view output aliases no foo input");
  const auto* base = static_cast<const char*>(owner->storage().data());
  // An empty view's address says nothing of its owner (its storage offset
  // on the CPU alias, which shares the owner's storage base, does).
  int64_t offset = cpu_view.numel() == 0 ? cpu_view.storage_offset()
                                         : (p - base) / static_cast<int64_t>(cpu_view.element_size());
  auto view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(owner->storage()),
                                                       owner->key_set(), cpu_view.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(cpu_view.sizes(), cpu_view.strides(), offset);
  if (cpu_view.is_conj()) view._set_conj(true);
  if (cpu_view.is_neg()) view._set_neg(true);
  return view;
}

}  // namespace

bool returns_views(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    if (r.alias_info() && !r.alias_info()->isWrite()) return true;
  }
  return false;
}

void run_views(const c10::OperatorHandle& op, Stack* stack, size_t num_args) {
  Stack args(stack->end() - num_args, stack->end());
  AliasScope aliases;
  Stack cpu = cpu_arguments(op.schema(), args, c10::Device(c10::kCPU), /*queued=*/false);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
  torch::jit::drop(*stack, num_args);
  for (const c10::IValue& r : cpu) {
    stack->push_back(r);
    c10::IValue& out = stack->back();
    if (out.isTensor() && out.toTensor().defined()) {
      out = foo_view_of(out.toTensor(), args);
    } else if (out.isTensorList()) {
      c10::List<at::Tensor> views;
      for (const at::Tensor& t : out.toTensorList()) views.push_back(foo_view_of(t, args));
      out = views;
    }
  }
}

}  // namespace foo::aten::fallback
