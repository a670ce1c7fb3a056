// foo's entry for index_put_with_sort_stub.
//
// index_put_'s host code (CPU's and CUDA's, run on foo at the call) hands an
// accumulating index_put_ (or any, under deterministic algorithms) on a
// device other than CPU to index_put_with_sort_stub, which only CUDA
// implements: it sorts the indices so that duplicates add up in a fixed
// order. CPU gets the same result from a serial loop. foo's entry makes the
// host's part of CUDA's kernel here, at the call (index dtypes, masks made
// into indices, indices broadcast together, value dtype), then queues CPU's
// index_put_ over the expanded indices, so that nothing it checked or warned
// about is checked or warned about again on the stream.
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ExpandUtils.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/TensorAdvancedIndexing.h>
#include <ATen/ops/_index_put_impl.h>
#include <c10/util/Exception.h>

#include "aten/KernelArguments.h"
#include "aten/Launch.h"
#include "aten/QueuedStubs.h"
#include "aten/TensorInfo.h"

namespace foo::aten {
namespace {

using IndexList = c10::List<std::optional<at::Tensor>>;

std::string shapes_of(const std::vector<at::Tensor>& tensors) {
  std::ostringstream os;
  const char* separator = "";
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;
    os << separator << t.sizes();
    separator = ", ";
  }
  return os.str();
}

void index_put_with_sort(at::Tensor& self, const IndexList& indices, const at::Tensor& value, bool accumulate,
                         bool unsafe) {
  TORCH_CHECK(!indices.empty() || at::is_expandable_to(value.sizes(), self.sizes()), "shape mismatch: value tensor of shape ",
              value.sizes(), " cannot be broadcast to indexing result of shape ", self.sizes());
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  at::native::checkIndexTensorTypes(indices, /*allow_int=*/true);
  // Masks become indices here: nonzero waits for the stream, as on CUDA.
  std::vector<at::Tensor> expanded = at::native::expandTensors(self, indices, /*ensure_same_device=*/true);
  try {
    expanded = at::expand_outplace(expanded);
  } catch (const std::exception&) {
    // CPU's message and type (its index_put_ makes this check at the call).
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes_of(expanded));
  }
  TORCH_CHECK(value.scalar_type() == self.scalar_type(),
              "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
              " for the destination and ", value.scalar_type(), " for the source.");
  IndexList plain;
  for (const at::Tensor& t : expanded) plain.push_back(t.defined() ? std::optional<at::Tensor>(t) : std::nullopt);
  const char* name = current_host_op();
  launch_op(self.device().index(), name ? name : "foo::index_put_with_sort",
            [s = TensorInfo(self), i = KernelArgument<const IndexList&>::pack(plain),
             v = KernelArgument<const at::Tensor&>::pack(value), accumulate, unsafe] {
              at::Tensor cpu_self = s.cpu();
              at::_index_put_impl_(cpu_self, KernelArgument<const IndexList&>::unpack(i),
                                   KernelArgument<const at::Tensor&>::unpack(v), accumulate, unsafe);
            });
}

[[maybe_unused]] const bool registered = (at::native::index_put_with_sort_stub.set_privateuse1_dispatch_ptr(&index_put_with_sort), true);

}  // namespace
}  // namespace foo::aten
