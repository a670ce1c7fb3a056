// foo tensors straight from the caching allocator, without a trip through
// the dispatcher, for the outputs operators allocate: what CUDA's kernels
// do (at::detail::empty_cuda), so that the profiler counts an output as
// memory its operator allocated, not as a child aten::empty's, and no
// operator pays for a second dispatch. On the device `options` names (the
// current one without an index).
#pragma once

#include <ATen/core/Tensor.h>

namespace foo::aten {

at::Tensor empty_foo(c10::IntArrayRef size, const c10::TensorOptions& options,
                     std::optional<c10::MemoryFormat> memory_format = std::nullopt);
at::Tensor empty_strided_foo(c10::IntArrayRef size, c10::IntArrayRef stride, const c10::TensorOptions& options);

}  // namespace foo::aten
