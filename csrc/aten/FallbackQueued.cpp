// The fallback's usual way: queued on the stream, with outputs shaped by
// the operator's meta function (FallbackStrategies.h).
#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "aten/EmptyFoo.h"
#include "aten/FallbackArguments.h"
#include "aten/FallbackOutRules.h"
#include "aten/FallbackStrategies.h"
#include "aten/FunctionalForm.h"
#include "aten/IValueTensors.h"
#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten::fallback {
namespace {

using Stack = torch::jit::Stack;

// Meta tensors that alias one another as the foo tensors do (one meta
// storage per foo storage), so that meta functions' overlap checks see the
// real aliasing.
class MetaAliases {
 public:
  at::Tensor operator()(const at::Tensor& t) {
    if (t.numel() == 0) return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
    const void* base = t.storage().data();
    auto it = std::find_if(storages_.begin(), storages_.end(), [&](const auto& e) { return e.first == base; });
    if (it == storages_.end()) {
      storages_.emplace_back(base, c10::Storage(c10::Storage::use_byte_size_t(), t.storage().nbytes(),
                                                c10::DataPtr(nullptr, c10::Device(c10::kMeta)),
                                                c10::GetAllocator(c10::kMeta), /*resizable=*/true));
      it = storages_.end() - 1;
    }
    auto meta = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(it->second),
                                                         c10::DispatchKeySet(c10::DispatchKey::Meta), t.dtype());
    meta.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    return meta;
  }

 private:
  std::vector<std::pair<const void*, c10::Storage>> storages_;
};

// The results of operators that torch gives no meta function but whose
// results are known without one:
//  - operators that return nothing and only write arguments their callers
//    sized (the fused optimizers' steps, cummax's and cummin's helpers):
//    nothing to allocate, so they are queued like any other, as CUDA
//    launches them;
//  - _logcumsumexp: a contiguous tensor of its input's shape and dtype, as
//    its CPU kernel allocates it.
//
// ATen's only: a custom operator without a meta function may do anything
// its author wrote, so it still runs on the host after a wait.
std::optional<Stack> results_without_meta_function(const c10::OperatorHandle& op, const Stack& args) {
  if (op.operator_name().name.rfind("aten::", 0) != 0) return std::nullopt;
  if (op.schema().returns().empty()) return Stack{};
  if (op.operator_name().name == "aten::_logcumsumexp" && args.at(0).isTensor()) {
    const at::Tensor& self = args[0].toTensor();
    return Stack{at::empty(self.sizes(), self.options().device(c10::kMeta))};
  }
  return std::nullopt;
}

// The functional form's meta results, if it has one and they are tensors
// as many as the out= form's.
std::optional<Stack> fresh_results(const c10::OperatorHandle& op, const Stack& args, const Stack& meta) {
  auto functional = functional_form(op);
  if (!functional) return std::nullopt;
  MetaAliases to_meta;
  Stack fresh;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_out_argument(op.schema().arguments()[i])) {
      fresh.push_back(map_tensors(args[i], std::ref(to_meta), unchanged, c10::Device(c10::kMeta)));
    }
  }
  try {
    functional->redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &fresh);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (fresh.size() != meta.size()) return std::nullopt;
  for (size_t r = 0; r < meta.size(); ++r) {
    if (!meta[r].isTensor() || !fresh[r].isTensor()) return std::nullopt;
  }
  return fresh;
}

}  // namespace

std::optional<Stack> meta_results(const c10::OperatorHandle& op, const Stack& args) {
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::Meta)) {
    if (auto known = results_without_meta_function(op, args)) return known;
  }
  const auto& schema = op.schema();
  auto is_out = [&](size_t i) { return i < schema.arguments().size() && is_out_argument(schema.arguments()[i]); };
  std::vector<const void*> input_storages;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_out(i)) continue;
    for_each_tensor(args[i], [&](const at::Tensor& t) {
      if (t.defined() && t.has_storage()) input_storages.push_back(t.storage().data());
    });
  }
  MetaAliases to_meta;
  Stack meta;
  meta.reserve(args.size());
  bool has_out_arguments = false;
  for (size_t i = 0; i < args.size(); ++i) {
    // An out= tensor goes in empty, unless it shares memory with an input
    // (the overlap checks need that): the meta function gives the layout
    // of a fresh output without the resize warning, which run_queued's
    // out= rules raise once, on the real tensor, as CPU's kernel does.
    const c10::IValue& v = args[i];
    if (is_out(i) && v.isTensor() && v.toTensor().defined() && v.toTensor().has_storage() &&
        std::find(input_storages.begin(), input_storages.end(), v.toTensor().storage().data()) ==
            input_storages.end()) {
      meta.push_back(at::empty({0}, v.toTensor().options().device(c10::kMeta)));
      has_out_arguments = true;
      continue;
    }
    meta.push_back(map_tensors(v, std::ref(to_meta), unchanged, c10::Device(c10::kMeta)));
  }
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (const std::exception& e) {
    // Overlap, and an out= tensor a structured operator's out= wrapper
    // refuses, are user errors the CPU kernel would report too: say them now.
    if (std::string_view(e.what()).find("unsupported operation: ") != std::string_view::npos ||
        std::string_view(e.what()).find("Expected out tensor to have ") != std::string_view::npos) {
      throw;
    }
    // No meta kernel, or a data-dependent one (some raise Python errors);
    // the host path runs the CPU kernel, which reports any real error.
    return std::nullopt;
  }
  for (const auto& r : meta) {
    if (!(r.isTensor() || r.isTensorList() || r.isNone())) return std::nullopt;
  }
  if (has_out_arguments && !settle_out_results(op, args, fresh_results(op, args, meta), meta)) return std::nullopt;
  return meta;
}

bool inexact_meta(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  // multi_margin_loss's out= form: its meta function (torch's decomposition
  // under out_wrapper) gives a 0-dim input's result shape [1], CPU's kernel [].
  return name == "aten::_embedding_bag" || name == "aten::_embedding_bag_forward_only" ||
         (name == "aten::multi_margin_loss" && op.operator_name().overload_name == "out");
}

void run_queued(const c10::OperatorHandle& op, Stack* stack, size_t num_args, c10::Device device,
                const Stack& meta, const Widening& widening) {
  Stack args(stack->end() - num_args, stack->end());
  const auto& schema = op.schema();
  // Outputs: fresh ones allocated now with the meta layout, out= ones
  // shaped by ATen's out= rules; the kernel copies the CPU results into both.
  Stack results;
  std::vector<std::pair<at::Tensor, size_t>> targets_now;  // (foo output, index into flattened CPU results)
  size_t flat = 0;
  for (size_t r = 0; r < meta.size(); ++r) {
    if (auto arg = written_argument(schema, r)) {
      if (is_out_argument(schema.arguments()[*arg]) && meta[r].isTensor()) {
        at::Tensor out = args[*arg].toTensor();
        shape_out_argument(op, out, meta[r].toTensor());
        targets_now.emplace_back(out, flat);
      }
      results.push_back(args[*arg]);
      flat += 1;
    } else if (meta[r].isTensor() && !meta[r].toTensor().defined()) {
      results.push_back(meta[r]);  // an output the operator leaves undefined
      flat += 1;
    } else if (meta[r].isTensor()) {
      const at::Tensor& m = meta[r].toTensor();
      auto out = empty_strided_foo(m.sizes(), m.strides(), m.options().device(device));
      targets_now.emplace_back(out, flat++);
      results.push_back(out);
    } else if (meta[r].isTensorList()) {
      c10::List<at::Tensor> outs;
      for (const at::Tensor& m : meta[r].toTensorList()) {
        auto out = empty_strided_foo(m.sizes(), m.strides(), m.options().device(device));
        targets_now.emplace_back(out, flat++);
        outs.push_back(out);
      }
      results.push_back(outs);
    } else {
      results.push_back(meta[r]);
      flat += 1;
    }
  }
  PhiloxStates rngs;
  Stack cpu = cpu_arguments(schema, args, device, /*queued=*/true, &rngs);
  give_stand_ins(cpu, args, out_arguments(schema, args));
  std::vector<std::pair<TensorInfo, size_t>> targets;
  targets.reserve(targets_now.size());
  SerialWork work;
  for (auto& [t, index] : targets_now) {
    work.add(t);
    if (t.numel() > 0) targets.emplace_back(TensorInfo(t), index);
  }
  for (const c10::IValue& a : args) {
    if (a.isTensor()) {
      work.add(a.toTensor());
    } else if (a.isTensorList()) {
      for (const at::Tensor& t : a.toTensorList()) work.add(t);
    }
  }
  launch_op(device.index(), interned_name(op.schema().name()),
            [op, cpu = std::move(cpu), rngs = std::move(rngs), targets = std::move(targets), widening] {
              // The call consumes its stack; `cpu` stays whole for the next
              // run of a captured kernel.
              Stack call = cpu;
              for (const auto& [index, rng] : rngs) call[index] = rng.generator();
              run_cpu_kernel(op, call, widening);
              std::vector<at::Tensor> flat_results;
              for (const auto& r : call) {
                if (r.isTensorList()) {
                  for (const at::Tensor& t : r.toTensorList()) flat_results.push_back(t);
                } else {
                  flat_results.push_back(r.isTensor() ? r.toTensor() : at::Tensor());
                }
              }
              for (const auto& [target, index] : targets) {
                at::Tensor dst = target.cpu();
                TORCH_CHECK(flat_results[index].sizes() == dst.sizes(), "output ", index, " has shape ",
                            flat_results[index].sizes(), " on CPU but its meta function gave ", dst.sizes());
                if (!flat_results[index].is_same(dst)) dst.copy_(flat_results[index]);
              }
            },
            work.serial());
  torch::jit::drop(*stack, num_args);
  for (auto& r : results) stack->push_back(std::move(r));
}

}  // namespace foo::aten::fallback
