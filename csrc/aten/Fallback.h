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

// The operators that have gone through the CPU fallback in this process
// (OpCounts.h has those that made the host wait).
std::vector<std::string> fallback_ops();

}  // namespace foo::aten
