// What a thread gives back before it sleeps in foo_sim.
#pragma once

namespace foo {

// Registers foo_sim's idle hook (fooSetIdleHook): a thread about to sleep
// there, an executor with no work or a host thread waiting for the device,
// first releases its OpenMP team's threads.
void release_openmp_teams_when_idle();

}  // namespace foo
