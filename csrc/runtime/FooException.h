// Turns foo_sim error codes into the exceptions PyTorch users expect:
// torch.OutOfMemoryError for allocation failures, RuntimeError otherwise,
// always with foo_sim's message naming the offending value.
#pragma once

#include <string>

#include <c10/util/Exception.h>
#include <foo_sim/foo_runtime.h>

namespace foo::detail {

[[noreturn]] void throw_foo_error(fooError_t error, const char* file, int line);
// For a kernel that failed at its own launch (FOO_SIM_LAUNCH_BLOCKING=1):
// the error also names the code that launched it.
[[noreturn]] void throw_launch_failure(const char* file, int line);

}  // namespace foo::detail

namespace foo {

// A kernel's failure message that names the c10 exception type it threw
// (c10::IndexError, ...), so the synchronization that reports it raises
// that type, as CPU raises it at the call. foo_sim keeps the message only.
std::string typed_kernel_message(const c10::Error& e, const std::string& message);

// The result of fooStreamQuery / fooEventQuery as a bool: true when the
// work is done, false when it is not yet (not an error for the user);
// anything else throws.
bool query_result(fooError_t e);

// Where the host is in the program that calls foo ("file.py:12"), or "" if
// unknown. The runtime knows no Python: the Python module installs this.
using LaunchSiteProvider = std::string (*)();
void set_launch_site_provider(LaunchSiteProvider provider);

}  // namespace foo

#define FOO_CHECK(EXPR)                                                      \
  do {                                                                       \
    const fooError_t foo_check_err_ = (EXPR);                                \
    if (C10_UNLIKELY(foo_check_err_ != fooSuccess)) {                        \
      ::foo::detail::throw_foo_error(foo_check_err_, __FILE__, __LINE__);        \
    }                                                                        \
  } while (0)
