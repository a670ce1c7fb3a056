// The CPU call a fallback makes: its arguments, and the out= and in-place
// arguments among them.
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>
#include <c10/core/Device.h>

#include "aten/FallbackRng.h"

namespace foo::aten::fallback {

// The call's arguments as the CPU kernel takes them: CPU aliases of the foo
// tensors, the CPU device, and per-launch CPU generators. For a kernel that
// runs later (`queued`, with `rngs`), CPU tensors are copied now and
// generator arguments are left to the kernel.
torch::jit::Stack cpu_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& args,
                                c10::Device device, bool queued, PhiloxStates* rngs = nullptr);

// The argument a returned write-alias refers to (in-place and out= ops).
std::optional<size_t> written_argument(const c10::FunctionSchema& schema, size_t ret);

// Whether the argument is an out= argument (keyword-only and written).
bool is_out_argument(const c10::Argument& a);

// The defined out= tensors among the arguments, by argument index.
std::vector<size_t> out_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& args);

// A fresh CPU tensor for each out= argument: the CPU kernel may resize its
// outputs in ways meta functions do not predict.
void give_fresh_outputs(torch::jit::Stack& cpu, const torch::jit::Stack& args, const std::vector<size_t>& outs);

}  // namespace foo::aten::fallback
