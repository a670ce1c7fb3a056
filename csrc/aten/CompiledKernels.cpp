#include "aten/CompiledKernels.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "aten/Launch.h"

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

std::mutex names_mutex;
// Never erased: launch_op keeps the name's address until the kernel has run.
std::unordered_map<PackedKernelFn, std::unique_ptr<const std::string>> kernel_names;

const char* kernel_name(PackedKernelFn fn) {
  std::lock_guard<std::mutex> lock(names_mutex);
  auto it = kernel_names.find(fn);
  return it == kernel_names.end() ? "torch.compile kernel" : it->second->c_str();
}

}  // namespace

void name_compiled_kernel(PackedKernelFn fn, const std::string& name) {
  std::lock_guard<std::mutex> lock(names_mutex);
  if (kernel_names.find(fn) == kernel_names.end()) {
    kernel_names.emplace(fn, std::make_unique<const std::string>("torch.compile kernel " + name));
  }
}

void launch_compiled_kernel(c10::DeviceIndex device, PackedKernelFn fn, CompiledKernelArgs args) {
  TORCH_CHECK(fn != nullptr, "torch.compile kernel launch: null kernel address");
  launch_op(device, kernel_name(fn), [fn, args = std::move(args)] { fn(args.args().data()); });
}

}  // namespace foo::aten
