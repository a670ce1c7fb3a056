#include "aten/FallbackArguments.h"

#include <ATen/ops/empty_strided.h>

#include "aten/IValueTensors.h"
#include "aten/KernelArguments.h"
#include "aten/TensorInfo.h"

namespace foo::aten::fallback {
namespace {

using Stack = torch::jit::Stack;

at::Tensor to_cpu_alias(const at::Tensor& t) { return cpu_alias(t); }

}  // namespace

Stack cpu_arguments(const c10::FunctionSchema& schema, const Stack& args, c10::Device device, bool queued,
                    PhiloxStates* rngs) {
  Stack out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < schema.arguments().size() && is_generator_argument(schema.arguments()[i])) {
      PhiloxFooState rng = philox_state_for(args[i], device);
      out.push_back(rngs ? c10::IValue() : c10::IValue(rng.generator()));
      if (rngs) rngs->emplace_back(i, std::move(rng));
      continue;
    }
    out.push_back(queued ? map_tensors(args[i], to_cpu_alias, pack_cpu_tensor, c10::Device(c10::kCPU))
                         : map_tensors(args[i], to_cpu_alias, unchanged, c10::Device(c10::kCPU)));
  }
  return out;
}

std::optional<size_t> written_argument(const c10::FunctionSchema& schema, size_t ret) {
  const auto* info = schema.returns()[ret].alias_info();
  if (info == nullptr || !info->isWrite()) return std::nullopt;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const auto* a = schema.arguments()[i].alias_info();
    if (a && a->isWrite() && a->beforeSets() == info->beforeSets()) return i;
  }
  return std::nullopt;
}

bool is_out_argument(const c10::Argument& a) {
  return a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite();
}

std::vector<size_t> out_arguments(const c10::FunctionSchema& schema, const Stack& args) {
  std::vector<size_t> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_out_argument(schema.arguments()[i]) && args[i].isTensor() && args[i].toTensor().defined()) {
      outs.push_back(i);
    }
  }
  return outs;
}

void give_stand_ins(Stack& cpu, const Stack& args, const std::vector<size_t>& outs) {
  for (size_t i : outs) {
    const at::Tensor& out = args[i].toTensor();
    cpu[i] = at::empty_strided(out.sizes(), out.strides(), out.options().device(c10::kCPU));
  }
}

void give_layout(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  if (out.sizes() == sizes && out.strides() == strides) return;
  // set_ grows the storage as resize_ does (Resize.cpp), keeping the offset.
  at::Tensor t = out;
  t.set_(out.storage(), out.storage_offset(), sizes, strides);
}

}  // namespace foo::aten::fallback
