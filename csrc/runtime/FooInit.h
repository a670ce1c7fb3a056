// Lazy initialization of the foo runtime and the fork rule that comes with
// it: a process forked after initialization cannot use foo devices.
#pragma once

namespace foo {

// Starts the runtime once, thread-safely. Throws if there is no device or
// if called in a child forked after the parent initialized foo.
void lazy_init();
bool is_initialized();

// What the ATen-level runtime (a layer above this one) needs done when the
// runtime starts: lazy_init runs `step` right after foo_sim's fooInit, under
// its lock. Set once, when the library loads (aten_runtime/FooAtenInit.cpp).
void set_aten_init_step(void (*step)());

// True in a child process forked after foo was initialized.
bool in_bad_fork();
[[noreturn]] void throw_bad_fork_error();

}  // namespace foo
