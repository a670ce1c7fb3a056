// Sparse COO operators that CUDA's kernels run without waiting for the
// device, on foo as they are on CUDA: from dense operators on the indices
// and values, queued on the stream. SparseFallback.cpp asks here before it
// makes the host wait.
#pragma once

#include <string>

#include <ATen/core/stack.h>

namespace foo::aten {

// Runs operator `name` (its full name) on the `num_args` arguments at the
// top of `stack` and leaves its result there, if this call is one CUDA
// queues: a sum of two sparse tensors (`add.out`, whose result
// concatenates both operands' indices and values, uncoalesced, as CUDA's
// does), or a product with a 0-dim dense tensor (`mul.out`, which touches
// only the values). Returns false, the stack untouched, for any other call.
bool run_sparse_queued(const std::string& name, torch::jit::Stack* stack, size_t num_args);

}  // namespace foo::aten
