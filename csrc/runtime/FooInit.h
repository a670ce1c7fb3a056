// Lazy initialization of the foo runtime and the fork rule that comes with
// it: a process forked after initialization cannot use foo devices.
#pragma once

namespace foo {

// Starts the runtime once, thread-safely. Throws if there is no device or
// if called in a child forked after the parent initialized foo.
void lazy_init();
bool is_initialized();
// True in a child process forked after foo was initialized.
bool in_bad_fork();
[[noreturn]] void throw_bad_fork_error();

}  // namespace foo
