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

// One compiled kernel: its entry point, its name for errors and the
// profiler, and which of its arguments it writes (its non-const pointers),
// which the race detector is told at each launch, as an operator's schema
// tells it. Owned by the generated module that launches it, and released
// with it.
class CompiledKernel {
 public:
  CompiledKernel(PackedKernelFn fn, const std::string& name, std::vector<bool> writes);
  ~CompiledKernel();
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  // Queues `fn(args)` on the current stream of `device`, after the work
  // already queued there, with the launching thread's intra-op thread
  // count. `tensors` holds, while the race detector is on, the launch's
  // tensor arguments by argument position (undefined for scalars); empty
  // otherwise. Returns once the call is queued.
  void launch(c10::DeviceIndex device, CompiledKernelArgs args, const std::vector<at::Tensor>& tensors) const;

  // Compiled kernels not yet released in this process (for tests).
  static int64_t live_count();

 private:
  PackedKernelFn fn_;
  // Interned: the profiler keeps kernel names for the life of the process
  // (the set grows only with names never seen before).
  const char* name_;
  std::vector<bool> writes_;  // by argument position
};

}  // namespace foo::aten
