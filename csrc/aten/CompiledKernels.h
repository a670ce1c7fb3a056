// Launches kernels that torch.compile (inductor's C++ code generation)
// compiled for foo, on the current stream of a foo device.
#pragma once

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>

namespace foo::aten {

// One argument of a compiled kernel, captured on the host at launch time: a
// data pointer, an integer (sizes) or a floating-point scalar.
union CompiledKernelArg {
  const void* ptr;
  int64_t i;
  double d;
};

// The packed entry point torch_foo's inductor backend adds to each kernel:
// it unpacks the arguments and calls the kernel.
using PackedKernelFn = void (*)(const CompiledKernelArg* args);

// Queues `fn(args)` on the current stream of `device`, after the work
// already queued there, with the launching thread's intra-op thread count.
// Returns once the call is queued.
void launch_compiled_kernel(c10::DeviceIndex device, PackedKernelFn fn, std::vector<CompiledKernelArg> args);

}  // namespace foo::aten
