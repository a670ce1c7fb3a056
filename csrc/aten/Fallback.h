#pragma once

#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace foo::aten {

// The boxed fallback of every operator without a foo kernel: runs its CPU
// kernel on the foo tensors' memory, queued on the current stream (see
// Fallback.cpp).
void foo_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The operators that have gone through the CPU fallback in this process.
std::vector<std::string> fallback_ops();
// Those among them that synchronized the host with the stream because their
// results depend on the data (nonzero, unique, .item(), ...), as on CUDA.
std::vector<std::string> synchronizing_ops();

}  // namespace foo::aten
