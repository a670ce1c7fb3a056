// What the fallback checks of a call's arguments on the host, at the call,
// as CUDA's host code checks them (a CPU kernel would check them later, as
// it runs on the stream).
#pragma once

#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/Device.h>

namespace foo::aten::fallback {

// The call's common device (ATen's word, as in the generated wrappers'
// check_and_update_common_device), after checking the other tensors'
// devices as CUDA does for the operator (see DeviceCheck.h).
c10::Device common_device(const c10::OperatorHandle& op, const std::string& name, const torch::jit::Stack& args);

// What an operator writes is on the call's device, as CUDA's kernels
// require (a CPU 0-dim tensor is a scalar only as an input). Written CPU
// tensors would otherwise be copied at the call, like every CPU input, and
// the result lost with the copy.
void check_written_arguments_on_device(const c10::FunctionSchema& schema, const torch::jit::Stack& args,
                                       c10::Device device);

// CPU kernels refuse to write a tensor that partly overlaps one they read,
// but as they run, which for foo is later, on the stream. Checked here on
// the host, the error is raised by the call, as on CPU and CUDA.
void check_written_arguments_do_not_partly_overlap(const c10::FunctionSchema& schema, const torch::jit::Stack& args,
                                                   const std::string& name);

// foo has no quantized kernels (no QuantizedPrivateUse1 registrations), so
// an operator given a quantized tensor or dtype, or whose result would be a
// quantized tensor, raises NotImplementedError at the call, as the
// dispatcher does on any backend without them, instead of handing back a
// tensor of another dtype. Both checks are needed: some meta functions
// give a float result for a quantized dtype (quantize_per_tensor's), and a
// synchronous call has no meta result.
void check_no_quantized_arguments(const c10::FunctionSchema& schema, const torch::jit::Stack& args,
                                  const std::string& name);
void check_no_quantized_results(const std::string& name, const torch::jit::Stack& results);

}  // namespace foo::aten::fallback
