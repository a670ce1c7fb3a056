// Reductions as NCCL does them, on gloo, which lacks some: bool SUM and
// PRODUCT, PREMUL_SUM, integer AVG and complex tensors. Each rule rewrites
// the ReduceOp gloo gets and says what fooccl does around gloo's reduction.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace foo::distributed {

// NCCL's rules for reductions that gloo does not have: a bool SUM is a MAX
// and a bool PRODUCT a MIN (so that the result is a bool, never a byte
// count that wraps), and PREMUL_SUM takes floating types only; refused at
// the call, as NCCL refuses them.
void apply_nccl_reduce_rules(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors);

// gloo has no PREMUL_SUM: the factor is applied to what gloo reduces (the
// tensor itself for an all_reduce, whose input is its output; a staged
// copy of the input otherwise), then gloo sums. Returns the factor (1 for
// other operations) and rewrites op.
double premul_factor(c10d::ReduceOp& op);

// gloo has no AVG for integers. NCCL's is the sum divided by the group's
// size, rounded toward zero: when an AVG involves integers, the op becomes
// SUM and the kernel divides what gloo summed (floats of the same
// coalesced call too, exactly). Returns the divisor (0: nothing to do)
// and rewrites op.
int64_t integer_average(c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors, int size);

// Divides what gloo summed by an integer AVG's divisor, as NCCL does
// (rounded toward zero for integers).
void divide(const at::Tensor& t, int64_t divisor);

// As NCCL's all_reduce, reduce and broadcast: a complex tensor is
// exchanged as its real view, for the operations for which that is the
// same thing (`op`: none for a broadcast).
at::Tensor complex_as_real(const at::Tensor& t, const c10d::ReduceOp* op, const char* name);

}  // namespace foo::distributed
