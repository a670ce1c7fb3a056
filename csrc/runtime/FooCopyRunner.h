// Large copies on ATen's intra-op threads.
#pragma once

namespace foo {

// Registers ATen's intra-op thread pool as foo_sim's copy runner
// (fooSetCopyRunner): the pieces of a large foo copy run on the threads
// CPU PyTorch's own copy_ runs on, instead of on threads of foo_sim's
// that would compete with that pool for the cores.
void use_aten_threads_for_copies();

}  // namespace foo
