// The meta results of fallback calls, remembered by everything a meta
// function may read.
//
// A queued fallback call first runs its operator on meta tensors, for the
// outputs' shapes and the operator's argument checks (Fallback.cpp). Many
// operators without a foo kernel have their meta function in Python
// (torch/_meta_registrations.py), and calling one costs the host about
// 90 us: the GIL, and a Python object for every argument. A meta function
// reads only the tensors' metadata, how they alias one another, the other
// arguments and a little global state, so a call equal to an earlier one in
// all of these gets the earlier result.
//
// Only ATen's operators are remembered: torch registers their meta
// functions when it is imported, where a custom operator's may be
// redefined, and may do more than compute (count its calls, print). What
// the signature leaves out is not seen once a signature is remembered: a
// Meta kernel registered over an ATen operator's later on, and the module
// settings some Python meta functions read
// (torch.fx.experimental._config); a meta function's warnings show on the
// first call of each signature only. Nor is a call remembered that
// holds something whose value a meta function could read (a CPU tensor, a
// generator) or that is not plain data (a symbolic size, a Python object),
// nor a meta function that raised.
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace foo::aten {

// The meta result of `op` on `args` (foo tensors and plain values), as
// `compute(op, args)` gives it: computed for the first call of each
// signature on this thread, remembered for the next ones.
std::optional<torch::jit::Stack> cached_meta_results(
    const c10::OperatorHandle& op, const torch::jit::Stack& args,
    std::optional<torch::jit::Stack> (*compute)(const c10::OperatorHandle&, const torch::jit::Stack&));

}  // namespace foo::aten
