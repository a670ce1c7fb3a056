// torch.kaiser_window on foo. ATen's implementation (CompositeExplicitAutograd,
// the same for every device) makes the window on the device and calls
// kaiser_window_stub for the device type itself, past the dispatcher, so
// foo registers that stub: a kernel on the stream that runs CPU's over the
// foo tensors' memory, as every foo kernel does.
#include <ATen/TensorIterator.h>
#include <ATen/ops/kaiser_window.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/UnaryOps.h>

#include "aten/Launch.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

void kaiser_window_kernel(at::TensorIteratorBase& iter, const int64_t window_length, const double beta) {
  const at::Tensor& window = iter.output(0);
  launch_op(window.device().index(), "aten::kaiser_window", [out = TensorInfo(window), window_length, beta] {
              // The stub computes the window of `window_length` points over
              // positions 0, 1, ...: CPU's window of that length. (CPU's stub
              // itself is not exported for other libraries to call.)
              at::Tensor out_alias = out.cpu();
              out_alias.copy_(at::kaiser_window(window_length, /*periodic=*/false, beta,
                                                out_alias.scalar_type()));
            });
}

}  // namespace
}  // namespace foo::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(kaiser_window_stub, &foo::aten::kaiser_window_kernel)
}  // namespace at::native
