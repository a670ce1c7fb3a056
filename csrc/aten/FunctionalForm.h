// The functional form of an out= overload: the overload of the same name
// whose arguments are the out= overload's but for its out= tensors
// (aten::mode for aten::mode.values, aten::add.Tensor for aten::add.out).
#pragma once

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>

namespace foo::aten {

// nullopt when `out_form` has no out= arguments or no such overload exists.
std::optional<c10::OperatorHandle> functional_form(const c10::OperatorHandle& out_form);

}  // namespace foo::aten
