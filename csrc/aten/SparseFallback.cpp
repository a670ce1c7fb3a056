// Sparse COO and compressed (CSR, CSC, BSR, BSC) tensors on foo.
//
// A foo sparse tensor is ATen's own sparse tensor over foo tensors (its
// indices and values, or compressed and plain indices and values), with
// foo's sparse dispatch keys. The kernels CPU and CUDA share are
// device-generic: written in terms of dense operators on those tensors, they
// run as foo's dense kernels do, queued on the stream
// (generated/SparseOps.cpp). The others, whose CPU kernels read the indices directly, run
// here:
//  - products and sums with a dense result (sparse-dense addmm, adding a
//    sparse tensor into a dense one): their result sizes are known on the
//    host, so the CPU kernel is queued on the stream, over CPU sparse
//    tensors built there from aliases of the foo indices and values;
//  - sums of two sparse tensors and products with a scalar, which CUDA
//    computes from dense operators on the indices and values, are computed
//    so, queued (SparseQueued.h);
//  - the others, whose result sizes may depend on the data: the host waits
//    for the stream, as CUDA's sparse kernels make it wait for the sizes of
//    their results, runs the CPU kernel on copies, and copies the results
//    back to the device (torch.foo.synchronizing_ops() lists them).
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_unsafe.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "aten/DeviceCheck.h"
#include "aten/FallbackArguments.h"
#include "aten/FallbackLog.h"
#include "aten/IValueTensors.h"
#include "aten/KernelArguments.h"
#include "aten/Launch.h"
#include "aten/OpCounts.h"
#include "aten/OperatorName.h"
#include "aten/SparseQueued.h"
#include "aten/TensorInfo.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooStream.h"

namespace foo::aten {
namespace {

using torch::jit::Stack;

bool on_foo(const at::Tensor& t) { return t.defined() && t.device().is_privateuseone(); }

// The call's common device (ATen's word, as in the generated wrappers'
// check_and_update_common_device): the first foo tensor's, or none. The
// other tensors must be on it, as CUDA's sparse kernels require (CPU 0-dim
// tensors pass as scalars).
std::optional<c10::Device> sparse_common_device(const c10::OperatorHandle& op, const Stack& args) {
  std::optional<c10::Device> device;
  for (const auto& a : args) {
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (!device && on_foo(t)) device = t.device();
    });
  }
  if (!device) return device;
  for (const auto& a : args) {
    for_each_tensor(a, [&](const at::Tensor& t) {
      check_on_device_or_cpu_scalar(*device, t, op.schema().name().c_str());
    });
  }
  return device;
}

// Some CPU kernels save extra results for the backward only when an input
// requires grad (sparse.mm's reductions), so the copy keeps that flag.
at::Tensor cpu_copy(const at::Tensor& t) {
  at::Tensor copy = t.cpu();
  if (t.requires_grad() && !copy.requires_grad()) copy.set_requires_grad(true);
  return copy;
}

// `target` (a foo argument the operator writes) takes the CPU result, and
// a dense one its layout too (the CPU kernel applied ATen's out= rules to
// the copy).
void write_back(const at::Tensor& target, const at::Tensor& result) {
  if (target.layout() == c10::kStrided) fallback::give_layout(target, result.sizes(), result.strides());
  target.copy_(result);
}

// ------------------------------------------------ queued: dense results

// A foo sparse tensor as a queued kernel sees it: its index and value
// tensors by TensorInfo, its layout, sizes and coalesced flag by value.
class SparseTensorInfo {
 public:
  explicit SparseTensorInfo(const at::Tensor& t)
      : layout_(t.layout()), sizes_(t.sizes().vec()), coalesced_(t.layout() == c10::kSparse && t.is_coalesced()) {
    if (layout_ == c10::kSparse) {
      parts_ = {TensorInfo(t._indices()), TensorInfo(t._values())};
    } else {
      auto [compressed, plain] = at::sparse_csr::getCompressedPlainIndices(t);
      parts_ = {TensorInfo(compressed), TensorInfo(plain), TensorInfo(t.values())};
    }
  }

  // A CPU sparse tensor over the foo memory; valid inside the kernel.
  at::Tensor cpu() const {
    if (layout_ == c10::kSparse) {
      at::Tensor values = parts_[1].cpu();
      return at::_sparse_coo_tensor_unsafe(parts_[0].cpu(), values, sizes_, values.options().layout(c10::kSparse))
          ._coalesced_(coalesced_);
    }
    at::Tensor values = parts_[2].cpu();
    return at::_sparse_compressed_tensor_unsafe(parts_[0].cpu(), parts_[1].cpu(), values, sizes_,
                                                values.options().layout(layout_));
  }

 private:
  c10::Layout layout_;
  std::vector<int64_t> sizes_;
  bool coalesced_;
  std::vector<TensorInfo> parts_;
};

// A boxed argument packed for a queued call: a foo sparse or dense tensor,
// a CPU tensor copied now, or a plain value.
struct PackedIValue {
  std::optional<SparseTensorInfo> sparse;
  std::optional<PackedTensor> tensor;
  c10::IValue value;

  c10::IValue unpack() const {
    if (sparse) return sparse->cpu();
    if (tensor) return tensor->unpack();
    return value;
  }
};

bool is_sparse(const at::Tensor& t) { return t.defined() && t.layout() != c10::kStrided; }

// Sparse operators whose results are dense when one operand is sparse and
// the others dense: their sizes are known on the host, so they are queued.
bool queueable(const c10::OperatorHandle& op, const Stack& args) {
  static const std::set<std::string> dense_results = {"aten::addmm", "aten::addmm.out", "aten::addmm_",
                                                      "aten::add.out"};
  std::string full = full_name(op.operator_name());
  if (!dense_results.count(full)) return false;
  int sparse = 0;
  for (const auto& a : args) {
    if (a.isTensor()) {
      sparse += is_sparse(a.toTensor());
    } else if (a.isList() || a.isTensorList()) {
      return false;
    }
  }
  return sparse == 1;
}

// The results' sizes and dtypes: the operator on dense meta stand-ins.
Stack dense_meta_results(const c10::OperatorHandle& op, const Stack& args) {
  Stack meta;
  for (const auto& a : args) {
    if (!a.isTensor() || !a.toTensor().defined()) {
      meta.push_back(a);
      continue;
    }
    const at::Tensor& t = a.toTensor();
    auto options = t.options().device(c10::kMeta).layout(c10::kStrided);
    meta.push_back(is_sparse(t) ? at::empty(t.sizes(), options) : at::empty_strided(t.sizes(), t.strides(), options));
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  return meta;
}

void run_queued(const c10::OperatorHandle& op, Stack* stack, const Stack& args, c10::Device device) {
  const auto& schema = op.schema();
  Stack meta = dense_meta_results(op, args);
  Stack results;
  std::vector<std::pair<TensorInfo, size_t>> fresh;  // outputs the kernel copies into, by result index
  for (size_t r = 0; r < meta.size(); ++r) {
    const auto* info = schema.returns()[r].alias_info();
    std::optional<size_t> written;
    for (size_t i = 0; info && i < args.size(); ++i) {
      const auto* a = schema.arguments()[i].alias_info();
      if (a && a->isWrite() && a->beforeSets() == info->beforeSets()) written = i;
    }
    if (written) {
      at::Tensor out = args[*written].toTensor();
      at::native::resize_output(out, meta[r].toTensor().sizes());  // as CPU's out= kernels do
      results.push_back(out);
      continue;
    }
    const at::Tensor& m = meta[r].toTensor();
    at::Tensor out = at::empty_strided(m.sizes(), m.strides(), m.options().device(device));
    if (out.numel() > 0) fresh.emplace_back(TensorInfo(out), r);
    results.push_back(out);
  }
  std::vector<PackedIValue> packed;
  for (const auto& a : args) {
    PackedIValue k;
    if (a.isTensor() && is_sparse(a.toTensor())) {
      k.sparse.emplace(a.toTensor());
    } else if (a.isTensor()) {
      k.tensor.emplace(a.toTensor());
    } else {
      k.value = a.isDevice() ? c10::IValue(c10::Device(c10::kCPU)) : a;
    }
    packed.push_back(std::move(k));
  }
  launch_op(device.index(), interned_name(schema.name()), [op, packed = std::move(packed), fresh = std::move(fresh)] {
    Stack cpu;
    for (const auto& k : packed) cpu.push_back(k.unpack());
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op.callBoxed(&cpu);
    }
    for (const auto& [target, r] : fresh) target.cpu().copy_(cpu[r].toTensor());
  });
  torch::jit::drop(*stack, args.size());
  for (auto& r : results) stack->push_back(std::move(r));
}

// ------------------------------------------------------------ the fallback

void foo_sparse_fallback(const c10::OperatorHandle& op, Stack* stack) {
  std::string name = full_name(op.operator_name());
  fallback::note_fallback(name);
  const auto& schema = op.schema();
  size_t num_args = schema.arguments().size();
  Stack args(stack->end() - num_args, stack->end());
  std::optional<c10::Device> device = sparse_common_device(op, args);
  TORCH_CHECK(device.has_value(), schema.name(), ": no foo tensor among the arguments of a foo sparse call");
  c10::DeviceGuard guard(*device);
  if (queueable(op, args)) return run_queued(op, stack, args, *device);
  if (run_sparse_queued(name, stack, num_args)) return;
  note_synchronizing(name);
  getCurrentFooStream(device->index()).synchronize();

  // One copy per foo tensor: an argument passed twice (s.mul_(d) is
  // mul.out(s, d, out=s)) stays one tensor, whose CPU kernel sees it so.
  std::vector<std::pair<c10::TensorImpl*, at::Tensor>> copies;
  auto copy_once = [&copies](const at::Tensor& t) {
    for (const auto& [impl, copy] : copies) {
      if (impl == t.unsafeGetTensorImpl()) return copy;
    }
    return copies.emplace_back(t.unsafeGetTensorImpl(), cpu_copy(t)).second;
  };
  Stack cpu;
  cpu.reserve(num_args);
  for (const auto& a : args) {
    cpu.push_back(map_tensors(a, copy_once, unchanged, c10::Device(c10::kCPU)));
  }
  Stack cpu_args(cpu.begin(), cpu.end());  // the call consumes the stack; in-place results live here
  {
    // Below autograd: the foo call is already recorded there.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(&cpu);
  }

  for (size_t i = 0; i < num_args; ++i) {
    const auto* info = schema.arguments()[i].alias_info();
    if (info && info->isWrite() && args[i].isTensor() && on_foo(args[i].toTensor())) {
      write_back(args[i].toTensor(), cpu_args[i].toTensor());
    }
  }
  torch::jit::drop(*stack, num_args);
  for (size_t r = 0; r < cpu.size(); ++r) {
    const auto* info = schema.returns()[r].alias_info();
    if (info && info->isWrite()) {
      // The argument it aliases, now holding the result.
      for (size_t i = 0; i < num_args; ++i) {
        const auto* a = schema.arguments()[i].alias_info();
        if (a && a->beforeSets() == info->beforeSets()) {
          stack->push_back(args[i]);
          break;
        }
      }
      continue;
    }
    auto to_foo = [&](const at::Tensor& t) { return t.to(*device); };
    stack->push_back(map_tensors(cpu[r], unchanged, to_foo, *device));
  }
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&foo_sparse_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&foo_sparse_fallback>());
}

}  // namespace
}  // namespace foo::aten
