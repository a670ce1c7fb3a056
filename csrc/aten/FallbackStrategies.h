// The three ways the CPU fallback runs an operator, chosen per call by
// foo_cpu_fallback (Fallback.cpp):
//  - views (outputs alias an input): computed on the host at once; they
//    read no data. The outputs are foo views of the input's storage
//    (FallbackViews.cpp).
//  - queued, the usual way: the operator runs on meta tensors first, which
//    checks the arguments and gives the outputs' sizes, strides and dtypes;
//    foo outputs are allocated, and a kernel queued on the current stream
//    runs the CPU implementation and copies each fresh output once into
//    place. In-place arguments are written directly. out= arguments follow
//    ATen's out= rules on the host (kept if the result's sizes, else
//    resized, with the usual warning, to the layout CPU's kernel gives it:
//    FallbackOutRules.h); the CPU kernel writes a CPU tensor of their
//    layout, which the kernel then copies into them (FallbackQueued.cpp).
//    A call whose result its out= tensor cannot take runs synchronously, for
//    CPU's kernel to raise its error at the call.
//  - synchronous, for operators whose outputs depend on the data (no meta
//    result, or non-tensor results, as `nonzero` or `.item()`): the host
//    waits for the stream, runs the CPU implementation, and copies each
//    fresh output once to the device; out= arguments end with the layout
//    the CPU kernel gave their CPU stand-ins. They are the only ones that
//    synchronize the host, as on CUDA; torch.foo.synchronizing_ops() lists
//    them (FallbackSynchronous.cpp).
// Each takes the call's `num_args` arguments from the top of `stack` and
// leaves the results there.
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/Device.h>

#include "aten/FallbackWidening.h"

namespace foo::aten::fallback {

bool returns_views(const c10::FunctionSchema& schema);
void run_views(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t num_args);

// The operator's results on meta tensors; nullopt when there is no usable
// (data-independent, tensor-only) meta result.
std::optional<torch::jit::Stack> meta_results(const c10::OperatorHandle& op, const torch::jit::Stack& args);
// Operators whose meta outputs do not match what their CPU kernels
// produce: they run synchronously.
bool inexact_meta(const c10::OperatorHandle& op);
void run_queued(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t num_args, c10::Device device,
                const torch::jit::Stack& meta, const Widening& widening);

void run_synchronously(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t num_args, c10::Device device,
                       const Widening& widening);

}  // namespace foo::aten::fallback
