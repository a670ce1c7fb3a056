// The fallback's log: the operators that went through the CPU fallback in
// this process, and those among them that synchronized the host with the
// stream (torch.foo.fallback_ops() and synchronizing_ops(), declared in
// Fallback.h). With FOO_WARN_FALLBACK=1, an operator's first fallback warns.
#pragma once

#include <string>

namespace foo::aten::fallback {

// `op` (its full name) went through the fallback.
void note_fallback(const std::string& op);
// `op` ran on the host after a wait for the stream.
void note_synchronizing(const std::string& op);

}  // namespace foo::aten::fallback
