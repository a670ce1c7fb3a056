// Which element types fooccl exchanges. NCCL's list decides (its
// ncclDataType map in torch), so that code that NCCL refuses is refused on
// foo too, at the call, and not later by gloo on the internal stream.
// gloo itself lacks float8: NCCL only moves float8 (it refuses to reduce
// it), so fooccl hands it to gloo as bytes.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace foo::distributed {

// Throws TypeError for an element type NCCL has no type for (int16,
// unsigned integers wider than 8 bits, complex outside the operations that
// view it as real), as ProcessGroupNCCL does; RuntimeError for float8 in a
// reduction (NCCL's refusal, except that its reduce accepts float8, which
// gloo cannot reduce).
void check_exchangeable(const at::Tensor& t, c10d::OpType op);

// The tensor as gloo can take it: float8 viewed as bytes (same shape),
// anything else unchanged.
at::Tensor as_gloo_type(const at::Tensor& t);

}  // namespace foo::distributed
