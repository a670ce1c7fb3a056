// Launches kernels that torch.compile (inductor's C++ code generation)
// compiled for foo, on the current stream of a foo device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
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

// The arguments of one launch, and the host copies the kernel reads.
class CompiledKernelArgs {
 public:
  void add_int(int64_t v) { args_.push_back(CompiledKernelArg{.i = v}); }
  void add_double(double v) { args_.push_back(CompiledKernelArg{.d = v}); }
  // A foo tensor is passed by address: stream order protects its memory.
  // A CPU tensor (a 0-dim step count, say) is copied now, as a CUDA launch
  // would copy it, so that host code changing it before the kernel runs
  // does not change what the kernel reads.
  void add_tensor(const at::Tensor& t);

  const std::vector<CompiledKernelArg>& args() const { return args_; }

 private:
  std::vector<CompiledKernelArg> args_;
  std::vector<std::unique_ptr<char[]>> host_copies_;
};

// Names `fn` (a kernel's entry point) for the errors its launches report.
// Compiled kernels stay loaded for the life of the process, and so do names.
void name_compiled_kernel(PackedKernelFn fn, const std::string& name);

// Queues `fn(args)` on the current stream of `device`, after the work
// already queued there, with the launching thread's intra-op thread count.
// Returns once the call is queued.
void launch_compiled_kernel(c10::DeviceIndex device, PackedKernelFn fn, CompiledKernelArgs args);

}  // namespace foo::aten
