// Deferred release of kernel closures: the closures of operator kernels
// that have run go back from the executor to be destroyed on a launching
// thread, at its next launch.
//
// The host allocates each kernel's closure (and what it carries: a CPU
// scalar, a vector of dims); if the executor freed them, glibc would send
// each block back to the host thread's arena under that arena's lock, while
// the host allocates from it under the same lock for its next launch. On a
// chain of small operators the two threads then take turns sleeping on that
// lock (docs/internals/launch-cost.md).
// Released on a launching thread, every block is freed by a thread of the
// kind that allocated it, through its own cache, and no lock is shared.
#pragma once

namespace foo::detail {

struct FinishedClosure {
  FinishedClosure* next = nullptr;
  void (*destroy)(FinishedClosure*) = nullptr;
};

// On the executor, once the kernel has run.
void defer_release(FinishedClosure* closure) noexcept;

// On a launching thread: destroys every closure deferred so far (at
// most those of the kernels that ran since the process last launched one).
void release_finished_closures() noexcept;

}  // namespace foo::detail
