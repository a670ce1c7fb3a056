// Operators whose results' sizes depend on the values: nonzero (and with it
// argwhere, where(cond)), boolean indexing, masked_select, unique. As on
// CUDA the host waits for the stream, here to compute the result itself
// with CPU's kernel on the foo memory, sizes and values in one pass, and to
// put it into fresh foo memory directly (HostResult.h). The stream's queued
// work runs on the waiting host where an executor is free (foo_sim's host
// work), so a loop of small operators and such reads never changes
// threads. Through the fallback they took a meta function that raises, a
// second wait for the copy of the result, and a boxed call.
#include <tuple>

#include <ATen/RedispatchFunctions.h>
#include <ATen/ops/index_cpu_dispatch.h>
#include <ATen/ops/index_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/DeviceCheck.h"
#include "aten/OpCounts.h"
#include "aten/HostResult.h"
#include "aten/MaskIndices.h"
#include "aten/Structured.h"
#include "aten/TensorInfo.h"
#include "runtime/FooStream.h"

namespace foo::aten {
namespace {

const c10::DispatchKeySet kCpu(c10::DispatchKey::CPU);

// Waits for the work queued before the call on the current stream of
// `device`: the inputs are then in place.
void wait_for_inputs(c10::Device device, const char* op_name) {
  note_synchronizing(op_name);
  getCurrentFooStream(device.index()).synchronize();
}

at::Tensor nonzero(const at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  wait_for_inputs(self.device(), "aten::nonzero");
  AliasScope aliases;
  return foo_tensor_from_host(at::redispatch::nonzero(kCpu, cpu_alias(self)), self.device());
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  check_same_device(self.device(), mask, "aten::masked_select");
  c10::DeviceGuard guard(self.device());
  wait_for_inputs(self.device(), "aten::masked_select");
  AliasScope aliases;
  return foo_tensor_from_host(at::redispatch::masked_select(kCpu, cpu_alias(self), cpu_alias(mask)), self.device());
}

using IndexList = c10::List<std::optional<at::Tensor>>;

// index.Tensor with indices of any other dtype: queued, its index values
// checked by the kernel (generated/StructuredOps.cpp registers its out=).
using QueuedIndex = Structured<"aten::index.Tensor", DeviceCheck::NoCheck, at::meta::structured_index_Tensor,
                               static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&, const IndexList&)>(
                                   &at::cpu::index_out)>;

// x[mask]: CUDA's index turns the masks into indices with nonzero, which
// waits for the stream. Here the host computes the whole result in that
// one wait, as masked_select does: no indices in foo memory, no second
// kernel. A mask cannot index out of range; its shape is checked at the
// call on either path.
at::Tensor index(const at::Tensor& self, const IndexList& indices) {
  if (self.device().type() != c10::DeviceType::PrivateUse1 || !masks_only(indices)) {
    return QueuedIndex::functional(self, indices);
  }
  check_argument<DeviceCheck::NoCheck>(self.device(), indices, "aten::index.Tensor");
  c10::DeviceGuard guard(self.device());
  wait_for_inputs(self.device(), "aten::index.Tensor");
  AliasScope aliases;
  IndexList on_host;
  on_host.reserve(indices.size());
  for (const std::optional<at::Tensor>& i : indices) {
    if (i.has_value() && i->defined() && i->device().type() == c10::DeviceType::PrivateUse1) {
      on_host.push_back(cpu_alias(*i));
    } else {
      on_host.push_back(i);
    }
  }
  return foo_tensor_from_host(at::redispatch::index(kCpu, cpu_alias(self), on_host), self.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts) {
  c10::DeviceGuard guard(self.device());
  wait_for_inputs(self.device(), "aten::_unique2");
  AliasScope aliases;
  auto [values, inverse, counts] =
      at::redispatch::_unique2(kCpu, cpu_alias(self), sorted, return_inverse, return_counts);
  return {foo_tensor_from_host(values, self.device()), foo_tensor_from_host(inverse, self.device()),
          foo_tensor_from_host(counts, self.device())};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("index.Tensor", TORCH_FN(index));
  m.impl("_unique2", TORCH_FN(unique2));
}

}  // namespace
}  // namespace foo::aten
