// The fallback's log: the operators that went through the CPU fallback in
// this process (torch.foo.fallback_ops(), declared in Fallback.h), each call
// also counted in OpCounts.h. With FOO_WARN_FALLBACK=1, an operator's first
// fallback warns.
#pragma once

#include <string>

namespace foo::aten::fallback {

// `op` (its full name) went through the fallback.
void note_fallback(const std::string& op);

}  // namespace foo::aten::fallback
