// ATen's out= rules on the fallback's queued path (FallbackQueued.cpp),
// where torch's meta functions and CPU's out= kernels part ways: CPU's
// kernel decides, and these rules say what it does, at the call.
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace foo::aten::fallback {

// After an out= form's meta pass (`meta`: the results a fresh call gives)
// and its functional form's (`fresh`, if it has one): raises what CPU's
// out= kernels check of their out= tensors and the meta functions do not;
// false when the call must run on the host, for CPU's kernel to raise its
// own error (a result its out= tensor cannot take); else leaves in `meta`
// the strides a resized out= tensor takes.
bool settle_out_results(const c10::OperatorHandle& op, const torch::jit::Stack& args,
                        const std::optional<torch::jit::Stack>& fresh, torch::jit::Stack& meta);

// Sizes out= tensor `out` for its meta result `m` as ATen's out= rules and
// CPU's kernel do: one of m's sizes keeps its strides; another is resized,
// with PyTorch's warning if it had elements, to m's strides (contiguous,
// and without the warning, where CPU's kernel resizes with resize_).
void shape_out_argument(const c10::OperatorHandle& op, const at::Tensor& out, const at::Tensor& m);

}  // namespace foo::aten::fallback
