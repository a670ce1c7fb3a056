#pragma once

#include <string>
#include <vector>

namespace foo::aten {

// The operators that have gone through the CPU fallback in this process.
std::vector<std::string> fallback_ops();
// Those among them that synchronized the host with the stream because their
// results depend on the data (nonzero, unique, .item(), ...), as on CUDA.
std::vector<std::string> synchronizing_ops();

}  // namespace foo::aten
