#include "aten/FallbackWidening.h"

#include "aten/CudaDtypes.h"
#include "aten/IValueTensors.h"

namespace foo::aten::fallback {

using Stack = torch::jit::Stack;

Widening widening_for(const c10::OperatorHandle& op, const Stack& args) {
  std::optional<at::ScalarType> dtype;
  for (const auto& a : args) {
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (!dtype && t.defined()) dtype = t.scalar_type();
    });
  }
  if (!dtype) return std::nullopt;
  const std::string& name = op.operator_name().name;
  check_cuda_has_kernel(name, *dtype);
  if (!has_dtype_rules(name)) return std::nullopt;
  // The operand CPU cannot take may be another than the first (half / complex32).
  Widening widening;
  for (const auto& a : args) {
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (widening || !t.defined()) return;
      if (auto wide = wider_compute_dtype(name, t.scalar_type())) widening = std::make_pair(t.scalar_type(), *wide);
    });
  }
  return widening;
}

void run_cpu_kernel(const c10::OperatorHandle& op, Stack& cpu, const Widening& widening) {
  if (!widening) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
    return;
  }
  auto [from, to] = *widening;
  const auto& schema = op.schema();
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (argument, its widened copy)
  for (size_t i = 0; i < cpu.size(); ++i) {
    const auto* info = i < schema.arguments().size() ? schema.arguments()[i].alias_info() : nullptr;
    bool writes = info && info->isWrite() && cpu[i].isTensor();
    at::Tensor original = writes ? cpu[i].toTensor() : at::Tensor();
    auto widen = [from = from, to = to](const at::Tensor& t) { return widened(t, from, to); };
    cpu[i] = map_tensors(cpu[i], widen, widen, c10::Device(c10::kCPU));
    if (writes && !cpu[i].toTensor().is_same(original)) written.emplace_back(original, cpu[i].toTensor());
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
  for (auto& [original, wide] : written) {
    if (original.sizes() != wide.sizes()) original.resize_(wide.sizes());  // a fresh out= tensor
    original.copy_(wide);
  }
}

}  // namespace foo::aten::fallback
