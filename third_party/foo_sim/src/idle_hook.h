// The embedding's hook for threads about to sleep in foo_sim (fooSetIdleHook).
#pragma once

#include "foo_sim/foo_runtime.h"

namespace foo_sim {

void set_idle_hook(fooIdleHook hook, void* user_data);
bool has_idle_hook();
// Runs the hook, if any, on the calling thread, which is `thread`. Call it
// without foo_sim's locks held.
void run_idle_hook(fooIdleThread thread);

}  // namespace foo_sim
