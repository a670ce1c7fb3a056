#include "aten/SparseQueued.h"

#include <optional>

#include <ATen/ATen.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/SparseTensorUtils.h>
#include <c10/core/ScalarType.h>

namespace foo::aten {
namespace {

bool is_coo(const c10::IValue& v) { return v.isTensor() && v.toTensor().defined() && v.toTensor().layout() == c10::kSparse; }

bool same_tensor(const at::Tensor& a, const at::Tensor& b) { return a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl(); }

// `out` becomes the sparse tensor of `sizes` (with `like`'s split into
// sparse and dense dimensions) over `indices` and `values`.
void assign_sparse(const at::Tensor& out, const at::Tensor& like, const at::Tensor& indices, const at::Tensor& values,
                   bool coalesced) {
  if (!same_tensor(out, like)) out.sparse_resize_and_clear_(like.sizes(), like.sparse_dim(), like.dense_dim());
  at::sparse::alias_into_sparse(out, indices, values);
  out._coalesced_(coalesced);
}

// add.out(self, other, *, alpha, out): both sparse. CUDA's result holds both
// operands' entries side by side (duplicates are summed by a later
// coalesce); it coalesces at once, waiting for the device, only when the
// entries outnumber the elements or the result's dtype differs from the
// computation's, and then so does this (by declining).
std::optional<at::Tensor> add_sparse_sparse(const torch::jit::Stack& args) {
  const at::Tensor& self = args[0].toTensor();
  const at::Tensor& other = args[1].toTensor();
  const c10::Scalar alpha = args[2].toScalar();
  const at::Tensor& out = args[3].toTensor();
  if (self.sizes() != other.sizes() || self.sparse_dim() != other.sparse_dim()) return std::nullopt;  // CPU's error
  c10::ScalarType common = at::result_type(self, other);
  if (out.scalar_type() != common) return std::nullopt;
  if (c10::isIntegralType(common, /*includeBool=*/true) && alpha.isFloatingPoint()) return std::nullopt;
  if (self._nnz() + other._nnz() > self.numel()) return std::nullopt;
  at::Tensor self_values = self._values().to(common);
  at::Tensor other_values = other._values().to(common);
  if (!(alpha.isIntegral(true) && alpha.to<int64_t>() == 1)) other_values = other_values.mul(alpha);
  at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
  at::Tensor values = at::cat({self_values, other_values}, 0);
  bool coalesced = other._nnz() == 0 ? self.is_coalesced() : self._nnz() == 0 && other.is_coalesced();
  assign_sparse(out, self, indices, values, coalesced);
  return out;
}

// mul.out(self, other, *, out): one operand sparse, the other a dense 0-dim
// tensor. The indices are kept, the values scaled.
std::optional<at::Tensor> mul_sparse_zerodim(const torch::jit::Stack& args) {
  bool self_sparse = is_coo(args[0]);
  const at::Tensor& sparse = args[self_sparse ? 0 : 1].toTensor();
  const at::Tensor& value = args[self_sparse ? 1 : 0].toTensor();
  const at::Tensor& out = args[2].toTensor();
  if (!value.defined() || value.is_sparse() || value.dim() != 0 || out.layout() != c10::kSparse) return std::nullopt;
  // A product the result cannot hold (an integer tensor scaled by 0.5 in
  // place) is CPU's to refuse, with its message.
  if (at::result_type(sparse._values(), value) != out.scalar_type()) return std::nullopt;
  if (same_tensor(out, sparse)) {
    out._values().mul_(value);
    return out;
  }
  at::Tensor values = at::empty(sparse._values().sizes(), sparse._values().options().dtype(out.scalar_type()));
  at::mul_out(values, sparse._values(), value);
  assign_sparse(out, sparse, sparse._indices().clone(), values, sparse.is_coalesced());
  return out;
}

}  // namespace

bool run_sparse_queued(const std::string& name, torch::jit::Stack* stack, size_t num_args) {
  torch::jit::Stack args(stack->end() - num_args, stack->end());
  std::optional<at::Tensor> result;
  {
    // Below autograd, as the fallback runs: the call is already recorded there.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    if (name == "aten::add.out" && is_coo(args[0]) && is_coo(args[1]) && is_coo(args[3])) {
      result = add_sparse_sparse(args);
    } else if (name == "aten::mul.out" && (is_coo(args[0]) != is_coo(args[1])) && is_coo(args[2])) {
      result = mul_sparse_zerodim(args);
    }
  }
  if (!result) return false;
  torch::jit::drop(*stack, num_args);
  stack->push_back(std::move(*result));
  return true;
}

}  // namespace foo::aten
