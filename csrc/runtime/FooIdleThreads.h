// What a thread gives back before it sleeps in foo_sim.
#pragma once

namespace foo {

// Registers foo_sim's idle hook (fooSetIdleHook): an executor about to
// sleep there gives its OpenMP team back, and so does a host thread waiting
// for the device while an executor may hold a team of its own.
void release_openmp_teams_when_idle();

// Called on an executor before a kernel that runs on more than one intra-op
// thread: from then until it gives its team back, the executor counts as
// holding an OpenMP team.
void note_executor_parallel_kernel();

}  // namespace foo
