// The global fallback: any operator without a foo kernel runs ATen's CPU
// implementation on CPU tensors that alias the foo memory (no copy of the
// inputs), in stream order.
//
// Three ways, chosen per call:
//  - views (outputs alias an input): computed on the host at once; they
//    read no data. The outputs are foo views of the input's storage.
//  - the usual way: the operator runs on meta tensors first, which checks
//    the arguments and gives the outputs' sizes, strides and dtypes; foo
//    outputs are allocated, and a kernel queued on the current stream runs
//    the CPU implementation and copies each fresh output once into place.
//    In-place and out= arguments are written directly.
//    out= arguments are resized to the meta result's shape on the host, and
//    the kernel copies the CPU result into them.
//  - operators whose outputs depend on the data (no meta result, or
//    non-tensor results, as `nonzero` or `.item()`): the host waits for the
//    stream, runs the CPU implementation, and copies each fresh output once
//    to the device. They are the only ones that synchronize the host, as on
//    CUDA; torch.foo.synchronizing_ops() lists them.
//
// CPU tensors among the arguments (scalars, index tensors) are copied when
// the operator is called: the kernel must see their values as of the call.
#include <algorithm>
#include <mutex>
#include <set>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/CudaDtypes.h"
#include "aten/DeviceCheck.h"
#include "aten/EmptyFoo.h"
#include "aten/Fallback.h"
#include "aten/KernelChecks.h"
#include "aten/FallbackMetaCache.h"
#include "aten/HostResult.h"
#include "aten/IValueTensors.h"
#include "aten/KernelTensor.h"
#include "aten/Launch.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooGenerator.h"
#include "runtime/FooStream.h"

namespace foo::aten {
namespace {

using Stack = torch::jit::Stack;
constexpr c10::DeviceType kFoo = c10::DeviceType::PrivateUse1;

// ------------------------------------------------------------ bookkeeping

std::string full_name(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

struct FallbackLog {
  std::mutex mutex;
  std::set<std::string> ops;
  std::set<std::string> synchronizing;
  const bool warn = [] {
    const char* v = std::getenv("FOO_WARN_FALLBACK");
    std::string value = v == nullptr ? "" : v;
    if (value == "1") return true;
    // Read at the first fallback, where failing would break an unrelated
    // operator: a malformed value is reported and counts as off.
    if (value != "" && value != "0") {
      TORCH_WARN("FOO_WARN_FALLBACK='", value, "' is invalid: expected 0 or 1; fallback warnings stay off");
    }
    return false;
  }();

  void note(const std::string& op) {
    std::lock_guard<std::mutex> lock(mutex);
    if (ops.insert(op).second && warn) {
      TORCH_WARN("The operator '", op, "' has no foo kernel: it runs through the CPU fallback.");
    }
  }

  void note_synchronizing(const std::string& op) {
    std::lock_guard<std::mutex> lock(mutex);
    synchronizing.insert(op);
  }
};

FallbackLog& log() {
  static FallbackLog instance;
  return instance;
}


// Operators that, like CUDA's, take CPU tensors of any size alongside
// device tensors: indexing's index tensors, and bernoulli_'s probabilities
// (CUDA's kernel copies them to the device).
bool accepts_cpu_tensors(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::index" || name == "aten::index_put_" || name == "aten::index_put" ||
         name == "aten::_index_put_impl_" || name == "aten::bernoulli_";
}

// What an operator writes is on the call's device, as CUDA's kernels
// require (a CPU 0-dim tensor is a scalar only as an input). Written CPU
// tensors would otherwise be copied at the call, like every CPU input, and
// the result lost with the copy.
void check_written_arguments_on_device(const c10::FunctionSchema& schema, const Stack& args, c10::Device device) {
  for (size_t i = 0; i < args.size() && i < schema.arguments().size(); ++i) {
    const auto* info = schema.arguments()[i].alias_info();
    if (!info || !info->isWrite()) continue;
    for_each_tensor(args[i], [&](const at::Tensor& t) { check_same_device(device, t, schema.name().c_str()); });
  }
}

// The foo device of the call, after checking the other tensors' devices as
// CUDA does for the operator (see DeviceCheck.h).
c10::Device call_device(const c10::OperatorHandle& op, const std::string& name, const Stack& args) {
  std::optional<c10::Device> device;
  std::optional<at::Tensor> cpu_tensor;
  for (const c10::IValue& v : args) {
    if (v.isDevice() && v.toDevice().type() == kFoo && !device) device = v.toDevice();
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      if (t.device().type() == kFoo) {
        TORCH_CHECK(!device || *device == t.device() || !device->has_index(),
                    "Expected all tensors to be on the same device, but found at least two devices, ", *device,
                    " and ", t.device(), "! (when checking the arguments of ", op.schema().name(), ")");
        device = t.device();
      } else if (!cpu_tensor || t.dim() > 0) {
        cpu_tensor = t;
      }
    });
  }
  if (!device) {
    // Only a foo generator brought the call here (torch.rand(3, generator=
    // a foo generator)): CPU's kernels refuse it with this message.
    for (const c10::IValue& v : args) {
      TORCH_CHECK(!(v.isGenerator() && v.toGenerator().device().type() == kFoo),
                  "Expected a 'cpu' device type for generator but found '", v.toGenerator().device().type(), "'");
    }
    TORCH_CHECK(false, op.schema().name(), ": no foo tensor among the arguments of a foo call");
  }
  if (!device->has_index()) device = c10::Device(kFoo, current_device());
  if (cpu_tensor) {
    const char* op_name = op.schema().name().c_str();
    if (has_exact_device_check(name)) {
      check_same_device(*device, *cpu_tensor, op_name);
    } else if (!accepts_cpu_tensors(op)) {
      check_on_device_or_cpu_scalar(*device, *cpu_tensor, op_name);
    }
  }
  return *device;
}

// ------------------------------------------------------------- the three ways

bool returns_views(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    if (r.alias_info() && !r.alias_info()->isWrite()) return true;
  }
  return false;
}

// The argument a returned write-alias refers to (in-place and out= ops).
std::optional<size_t> written_argument(const c10::FunctionSchema& schema, size_t ret) {
  const auto* info = schema.returns()[ret].alias_info();
  if (info == nullptr || !info->isWrite()) return std::nullopt;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const auto* a = schema.arguments()[i].alias_info();
    if (a && a->isWrite() && a->beforeSets() == info->beforeSets()) return i;
  }
  return std::nullopt;
}

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

at::Tensor to_cpu_alias(const at::Tensor& t) { return cpu_alias(t); }

bool is_generator_argument(const c10::Argument& a) {
  const auto& type = a.type();
  if (type->kind() == c10::TypeKind::GeneratorType) return true;
  auto optional = type->cast<c10::OptionalType>();
  return optional && optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

// The random stream a kernel draws from: the next one of the call's foo
// generator (the device's default one when none was given).
KernelRng kernel_rng(const c10::IValue& given, c10::Device device) {
  at::Generator gen = given.isNone() ? default_generator(device.index()) : given.toGenerator();
  TORCH_CHECK(gen.device() == device, "Expected a '", device, "' generator for an operator on ", device,
              ", but got a generator of ", gen.device());
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<FooGeneratorImpl>()->next_kernel_rng();
}

// Generator arguments of a queued call, by argument index: the kernel puts
// each one's CPU generator in place when it runs (a captured kernel runs
// once per replay, each time with fresh numbers).
using KernelRngs = std::vector<std::pair<size_t, KernelRng>>;

// The call's arguments as the CPU kernel takes them: CPU aliases of the foo
// tensors, the CPU device, and per-launch CPU generators. For a kernel that
// runs later (`queued`, with `rngs`), CPU tensors are copied now and
// generator arguments are left to the kernel.
Stack cpu_arguments(const c10::FunctionSchema& schema, const Stack& args, c10::Device device, bool queued,
                    KernelRngs* rngs = nullptr) {
  Stack out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < schema.arguments().size() && is_generator_argument(schema.arguments()[i])) {
      KernelRng rng = kernel_rng(args[i], device);
      out.push_back(rngs ? c10::IValue() : c10::IValue(rng.generator()));
      if (rngs) rngs->emplace_back(i, std::move(rng));
      continue;
    }
    out.push_back(queued ? map_tensors(args[i], to_cpu_alias, capture_host_tensor, c10::Device(c10::kCPU))
                         : map_tensors(args[i], to_cpu_alias, unchanged, c10::Device(c10::kCPU)));
  }
  return out;
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

at::Tensor foo_copy_of(const at::Tensor& cpu, c10::Device device) { return foo_tensor_from_host(cpu, device); }

bool is_out_argument(const c10::Argument& a) {
  return a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite();
}

// The defined out= tensors among the arguments, by argument index.
std::vector<size_t> out_arguments(const c10::FunctionSchema& schema, const Stack& args) {
  std::vector<size_t> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_out_argument(schema.arguments()[i]) && args[i].isTensor() && args[i].toTensor().defined()) {
      outs.push_back(i);
    }
  }
  return outs;
}

// A fresh CPU tensor for each out= argument: the CPU kernel may resize its
// outputs in ways meta functions do not predict.
void give_fresh_outputs(Stack& cpu, const Stack& args, const std::vector<size_t>& outs) {
  for (size_t i : outs) cpu[i] = at::empty({0}, args[i].toTensor().options().device(c10::kCPU));
}

// The widening a call needs (CudaDtypes.h): (the call's dtype, the dtype the
// CPU kernel computes in), or nullopt.
using Widening = std::optional<std::pair<at::ScalarType, at::ScalarType>>;

// Raises for a dtype CUDA has no kernel for (decided from the first tensor
// argument, as ATen's kernels dispatch on it); widens from the first tensor
// argument whose dtype the CPU kernel lacks.
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

// Runs the CPU kernel on `cpu`. With a widening, the tensors of the call's
// dtype are widened first, and the arguments the operator writes get the
// results back in their own dtype.
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

// Waits for the device's current stream, then runs on the host; out=
// arguments are then resized and filled.
void run_synchronously(const c10::OperatorHandle& op, Stack* stack, size_t num_args, c10::Device device,
                       const Widening& widening) {
  Stack args(stack->end() - num_args, stack->end());
  const auto& schema = op.schema();
  getCurrentFooStream(device.index()).synchronize();
  AliasScope aliases;
  Stack cpu = cpu_arguments(schema, args, device, /*queued=*/false);
  std::vector<size_t> outs = out_arguments(schema, args);
  give_fresh_outputs(cpu, args, outs);
  Stack cpu_outs(cpu.begin(), cpu.end());  // keeps the CPU out tensors after the call consumes the stack
  run_cpu_kernel(op, cpu, widening);
  // Without a meta result to give the results' dtypes, a widened result
  // goes back to the call's dtype.
  auto narrowed = [&](const at::Tensor& t) {
    return widening && t.scalar_type() == widening->second ? t.to(widening->first) : t;
  };
  for (size_t i : outs) {
    at::Tensor foo_out = args[i].toTensor();
    const at::Tensor& result = cpu_outs[i].toTensor();
    foo_out.resize_(result.sizes());
    foo_out.copy_(result);
  }
  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (auto arg = written_argument(schema, i)) {
      stack->push_back(args[*arg]);
      continue;
    }
    const c10::IValue& r = cpu[i];
    if (r.isTensor() && r.toTensor().defined()) {
      stack->push_back(foo_copy_of(narrowed(r.toTensor()), device));
    } else if (r.isTensorList()) {
      c10::List<at::Tensor> outs;
      for (const at::Tensor& t : r.toTensorList()) outs.push_back(foo_copy_of(narrowed(t), device));
      stack->push_back(outs);
    } else {
      stack->push_back(r);
    }
  }
}

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

// Runs the operator on meta tensors; nullopt when there is no usable
// (data-independent, tensor-only) meta result.
std::optional<Stack> meta_results(const c10::OperatorHandle& op, const Stack& args) {
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::Meta)) {
    if (auto known = results_without_meta_function(op, args)) return known;
  }
  MetaAliases to_meta;
  Stack meta;
  meta.reserve(args.size());
  for (const auto& v : args) meta.push_back(map_tensors(v, std::ref(to_meta), unchanged, c10::Device(c10::kMeta)));
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (const std::exception& e) {
    // Overlap is a user error the CPU kernel would report too: say it now.
    if (std::string_view(e.what()).find("unsupported operation: ") != std::string_view::npos) throw;
    // No meta kernel, or a data-dependent one (some raise Python errors);
    // the host path runs the CPU kernel, which reports any real error.
    return std::nullopt;
  }
  for (const auto& r : meta) {
    if (!(r.isTensor() || r.isTensorList() || r.isNone())) return std::nullopt;
  }
  return meta;
}

void run_queued(const c10::OperatorHandle& op, Stack* stack, size_t num_args, c10::Device device,
                const Stack& meta, const Widening& widening) {
  Stack args(stack->end() - num_args, stack->end());
  const auto& schema = op.schema();
  // Outputs: fresh ones allocated now with the meta layout, out= ones
  // resized to the meta shape; the kernel copies the CPU results into both.
  Stack results;
  std::vector<std::pair<at::Tensor, size_t>> targets_now;  // (foo output, index into flattened CPU results)
  size_t flat = 0;
  for (size_t r = 0; r < meta.size(); ++r) {
    if (auto arg = written_argument(schema, r)) {
      if (is_out_argument(schema.arguments()[*arg]) && meta[r].isTensor()) {
        at::Tensor out = args[*arg].toTensor();
        at::native::resize_output(out, meta[r].toTensor().sizes());
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
  KernelRngs rngs;
  Stack cpu = cpu_arguments(schema, args, device, /*queued=*/true, &rngs);
  give_fresh_outputs(cpu, args, out_arguments(schema, args));
  std::vector<std::pair<KernelTensor, size_t>> targets;
  targets.reserve(targets_now.size());
  for (auto& [t, index] : targets_now) {
    if (t.numel() > 0) targets.emplace_back(KernelTensor(t), index);
  }
  launch_op(device.index(), lasting_name(op.schema().name()),
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
            });
  torch::jit::drop(*stack, num_args);
  for (auto& r : results) stack->push_back(std::move(r));
}

// CPU kernels refuse to write a tensor that partly overlaps one they read,
// but as they run, which for foo is later, on the stream. Checked here on
// the host, the error is raised by the call, as on CPU and CUDA.
//
// Except the value of fill_, masked_fill_ and index_fill_ with a tensor
// value: their CPU kernels (and CUDA's) take it as a number before they
// write, so it may be an element of the tensor they fill (t.fill_(t[1])).
bool reads_its_value_first(const std::string& name) {
  return name == "aten::fill_.Tensor" || name == "aten::masked_fill_.Tensor" ||
         name == "aten::index_fill_.int_Tensor" || name == "aten::index_fill_.Dimname_Tensor";
}

void check_written_arguments_do_not_partly_overlap(const c10::FunctionSchema& schema, const Stack& args,
                                                   const std::string& name) {
  const bool value_first = reads_its_value_first(name);
  for (size_t w = 0; w < args.size(); ++w) {
    const auto* info = schema.arguments()[w].alias_info();
    if (!info || !info->isWrite()) continue;
    for_each_tensor(args[w], [&](const at::Tensor& written) {
      if (!written.defined() || !written.device().is_privateuseone()) return;
      for (size_t r = 0; r < args.size(); ++r) {
        if (r == w) continue;
        for_each_tensor(args[r], [&](const at::Tensor& read) {
          if (!read.defined() || (value_first && read.dim() == 0 && schema.arguments()[r].name() == "value")) return;
          if (read.device() == written.device()) at::assert_no_partial_overlap(written, read);
        });
      }
    });
  }
}

// Operators whose meta outputs do not match what their CPU kernels
// produce: they run on the host, synchronously.
bool inexact_meta(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::_embedding_bag" || name == "aten::_embedding_bag_forward_only";
}

}  // namespace

void foo_cpu_fallback(const c10::OperatorHandle& op, Stack* stack) {
  std::string name = full_name(op);
  log().note(name);
  const auto& schema = op.schema();
  size_t num_args = schema.arguments().size();
  Stack args(stack->end() - num_args, stack->end());
  c10::Device device = call_device(op, name, args);
  c10::DeviceGuard guard(device);
  if (returns_views(schema)) return run_views(op, stack, num_args);
  check_written_arguments_on_device(schema, args, device);
  check_written_arguments_do_not_partly_overlap(schema, args, name);
  check_fallback_arguments(name, args);
  Widening widening = widening_for(op, args);
  if (!inexact_meta(op)) {
    if (auto meta = remembered_meta_results(op, args, &meta_results)) {
      return run_queued(op, stack, num_args, device, *meta, widening);
    }
  }
  log().note_synchronizing(name);
  run_synchronously(op, stack, num_args, device, widening);
}

namespace {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&foo_cpu_fallback>()); }

// Operators that CPU and CUDA each run with a kernel of their own but that
// also have a composite (decomposed) kernel, which the dispatcher would pick
// for foo. The decompositions compute in the input's precision where the
// kernels accumulate in float, so foo runs the CPU kernel, as CUDA runs its
// own. The others of their kind have foo kernels: native_group_norm and
// native_layer_norm (Normalization.cpp), all and any (StructuredOps.cpp). tests/test_dtypes.py derives the
// list from native_functions.yaml and fails if one is missing.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"mish_backward", "addr", "addr.out", "linalg__powsum"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&foo_cpu_fallback>());
  }
}

}  // namespace

std::vector<std::string> fallback_ops() {
  std::lock_guard<std::mutex> lock(log().mutex);
  return {log().ops.begin(), log().ops.end()};
}

void note_synchronizing_op(const char* name) { log().note_synchronizing(name); }

std::vector<std::string> synchronizing_ops() {
  std::lock_guard<std::mutex> lock(log().mutex);
  return {log().synchronizing.begin(), log().synchronizing.end()};
}

}  // namespace foo::aten
