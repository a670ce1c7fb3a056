#include "aten/CompiledKernels.h"

#include <utility>

#include "aten/Launch.h"

namespace foo::aten {

void launch_compiled_kernel(c10::DeviceIndex device, PackedKernelFn fn, std::vector<CompiledKernelArg> args) {
  TORCH_CHECK(fn != nullptr, "torch.compile kernel launch: null kernel address");
  launch_op(device, "torch.compile kernel", [fn, args = std::move(args)] { fn(args.data()); });
}

}  // namespace foo::aten
