#pragma once

#include <string>
#include <vector>

namespace foo::aten {

// The operators that have gone through the CPU fallback in this process.
std::vector<std::string> fallback_ops();

}  // namespace foo::aten
