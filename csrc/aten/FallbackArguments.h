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

// For each out= argument, a CPU tensor of its sizes, strides and dtype for
// the CPU kernel to write: the kernel sees the out= tensor's layout, as on
// CPU (normal's out= form takes its shape from it), and may resize it
// in ways meta functions do not predict, which a CPU tensor over foo memory
// could not take.
void give_stand_ins(torch::jit::Stack& cpu, const torch::jit::Stack& args, const std::vector<size_t>& outs);

// Gives a foo out= tensor `sizes` and `strides`, growing its storage if
// they reach past its end; a no-op when it has them already.
void give_layout(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides);

}  // namespace foo::aten::fallback
