// Kernels that a waiting host thread runs itself (foo_sim's host work,
// fooSetHostWorkHook): while it does, the thread has the thread-local
// state of an executor, so that a kernel cannot tell where it runs.
#pragma once

namespace foo {

// Registers the hook that gives a host thread running kernels an
// executor's state (torch's thread-local state: dispatch keys and modes,
// grad and inference mode, autocast, thread-local RecordFunction callbacks,
// saved-tensor hooks, functorch; foo's current streams) and gives it its
// own back after, with the intra-op thread count it had.
void run_host_work_in_executor_state();

// True on a host thread while it runs kernels in an executor's place.
bool running_host_work();

}  // namespace foo
