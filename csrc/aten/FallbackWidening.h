// Fallback calls in a dtype CUDA has a kernel for and CPU has not: the CPU
// kernel runs on widened copies (CudaDtypes.h).
#pragma once

#include <optional>
#include <utility>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/ScalarType.h>

namespace foo::aten::fallback {

// The widening a call needs (CudaDtypes.h): (the call's dtype, the dtype the
// CPU kernel computes in), or nullopt.
using Widening = std::optional<std::pair<at::ScalarType, at::ScalarType>>;

// Raises for a dtype CUDA has no kernel for (decided from the first tensor
// argument, as ATen's kernels dispatch on it); widens from the first tensor
// argument whose dtype the CPU kernel lacks.
Widening widening_for(const c10::OperatorHandle& op, const torch::jit::Stack& args);

// Runs the CPU kernel on `cpu`. With a widening, the tensors of the call's
// dtype are widened first, and the arguments the operator writes get the
// results back in their own dtype.
void run_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack& cpu, const Widening& widening);

}  // namespace foo::aten::fallback
