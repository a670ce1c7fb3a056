// An operator's full name, "aten::add.Tensor": its name, and its overload
// name after a dot when it has one (c10::toString(OperatorName)'s form,
// built without a stream: the fallbacks and the race detector's hooks ask
// for it on every call).
#pragma once

#include <string>

#include <ATen/core/operator_name.h>

namespace foo::aten {

inline std::string full_name(const c10::OperatorName& name) {
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

}  // namespace foo::aten
