// The fallback's way for operators whose outputs depend on the data: on
// the host, after a wait for the stream (FallbackStrategies.h).
#include <vector>

#include "aten/FallbackArguments.h"
#include "aten/FallbackChecks.h"
#include "aten/FallbackStrategies.h"
#include "aten/HostResult.h"
#include "aten/OperatorName.h"
#include "aten/TensorInfo.h"
#include "runtime/FooStream.h"

namespace foo::aten::fallback {

using Stack = torch::jit::Stack;

// Waits for the device's current stream, then runs on the host; out=
// arguments then take their stand-ins' layouts and values.
void run_synchronously(const c10::OperatorHandle& op, Stack* stack, size_t num_args, c10::Device device,
                       const Widening& widening) {
  Stack args(stack->end() - num_args, stack->end());
  const auto& schema = op.schema();
  getCurrentFooStream(device.index()).synchronize();
  AliasScope aliases;
  Stack cpu = cpu_arguments(schema, args, device, /*queued=*/false);
  std::vector<size_t> outs = out_arguments(schema, args);
  give_stand_ins(cpu, args, outs);
  Stack cpu_outs(cpu.begin(), cpu.end());  // keeps the CPU out tensors after the call consumes the stack
  run_cpu_kernel(op, cpu, widening);
  check_no_quantized_results(full_name(op.operator_name()), cpu);
  // Without a meta result to give the results' dtypes, a widened result
  // goes back to the call's dtype.
  auto narrowed = [&](const at::Tensor& t) {
    return widening && t.scalar_type() == widening->second ? t.to(widening->first) : t;
  };
  // Each out= tensor ends as its stand-in did: the CPU kernel applied
  // ATen's out= rules to it (and warned of a resize, here on the calling
  // thread, as on CPU).
  for (size_t i : outs) {
    const at::Tensor& foo_out = args[i].toTensor();
    const at::Tensor& result = cpu_outs[i].toTensor();
    give_layout(foo_out, result.sizes(), result.strides());
    foo_out.copy_(result);
  }
  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (auto arg = written_argument(schema, i)) {
      stack->push_back(args[*arg]);
      continue;
    }
    const c10::IValue& r = cpu[i];
    if (r.isTensor() && r.toTensor().defined()) {
      stack->push_back(foo_tensor_from_host(narrowed(r.toTensor()), device));
    } else if (r.isTensorList()) {
      c10::List<at::Tensor> outs;
      for (const at::Tensor& t : r.toTensorList()) outs.push_back(foo_tensor_from_host(narrowed(t), device));
      stack->push_back(outs);
    } else {
      stack->push_back(r);
    }
  }
}

}  // namespace foo::aten::fallback
