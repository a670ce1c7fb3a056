// The memory format of a foo convolution's output, and of its backward's
// input and weight gradients: cuDNN's rule, so that channels-last code sees
// on foo the layouts it sees on CUDA (channels-last if the input or the
// weight is, except in double). torch.compile's fake tensors ask the same
// question for foo (torch_foo/compile/fake_conv.py), so that the layouts
// inductor's generated code expects are those foo's kernels produce.
#pragma once

#include <ATen/core/Tensor.h>

namespace foo::aten {

c10::MemoryFormat convolution_memory_format(const at::Tensor& input, const at::Tensor& weight);

}  // namespace foo::aten
