// Large copies on ATen's intra-op threads: registered with foo_sim when the
// runtime starts (FooInit.h's ATen init step).
#pragma once

namespace foo {

// Registers ATen's intra-op thread pool as foo_sim's copy runner
// (fooSetCopyRunner): a large foo copy is cut into as many pieces as the
// issuing thread has intra-op threads (torch.get_num_threads()), and the
// pieces run on OpenMP threads, the pool CPU PyTorch's own copy_ runs on,
// instead of on threads of foo_sim's that would compete with that pool for
// the cores.
void use_aten_threads_for_copies();

}  // namespace foo
