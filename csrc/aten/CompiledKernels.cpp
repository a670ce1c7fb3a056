#include "aten/CompiledKernels.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <utility>

#include "aten/Launch.h"
#include "aten/RaceAccesses.h"

namespace foo::aten {

void CompiledKernelArgs::add_tensor(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_privateuseone() || t.device().is_cpu(),
              "torch.compile kernel launch: a foo kernel cannot read a tensor on ", t.device());
  if (!t.device().is_cpu() || t.numel() == 0) {
    args_.push_back(CompiledKernelArg{.ptr = t.data_ptr()});
    return;
  }
  // Copy the bytes the tensor's strides span, so the kernel indexes the
  // copy exactly as it would the original.
  TORCH_CHECK(t.layout() == at::kStrided, "torch.compile kernel launch: a CPU argument must be strided");
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    TORCH_CHECK(t.stride(d) >= 0, "torch.compile kernel launch: negative strides are not supported");
    span += (t.size(d) - 1) * t.stride(d);
  }
  size_t bytes = static_cast<size_t>(span) * t.element_size();
  auto copy = std::make_unique<char[]>(bytes);
  std::memcpy(copy.get(), t.data_ptr(), bytes);
  args_.push_back(CompiledKernelArg{.ptr = copy.get()});
  host_copies_.push_back(std::move(copy));
}

namespace {
std::atomic<int64_t> g_live_kernels{0};
}  // namespace

CompiledKernel::CompiledKernel(PackedKernelFn fn, const std::string& name, std::vector<bool> writes)
    : fn_(fn), name_(interned_name("torch.compile kernel " + name)), writes_(std::move(writes)) {
  TORCH_CHECK(fn != nullptr, "torch.compile kernel ", name, ": null kernel address");
  g_live_kernels.fetch_add(1, std::memory_order_relaxed);
}

CompiledKernel::~CompiledKernel() { g_live_kernels.fetch_sub(1, std::memory_order_relaxed); }

int64_t CompiledKernel::live_count() { return g_live_kernels.load(std::memory_order_relaxed); }

void CompiledKernel::launch(c10::DeviceIndex device, CompiledKernelArgs args,
                            const std::vector<at::Tensor>& tensors) const {
  launch_with_accesses(tensors, writes_, name_, [&] {
    launch_op(device, name_, [fn = fn_, args = std::move(args)] { fn(args.args().data()); });
  });
}

}  // namespace foo::aten
