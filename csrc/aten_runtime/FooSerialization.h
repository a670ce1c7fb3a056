// Backend metadata of foo tensors: named boolean flags kept on the tensor
// (the place a vendor keeps per-tensor backend state, such as an internal
// data layout) and carried through torch.save / torch.load.
#pragma once

#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace foo {

void set_backend_flag(const at::Tensor& t, const std::string& name, bool value);
std::map<std::string, bool> backend_flags(const at::Tensor& t);

}  // namespace foo
