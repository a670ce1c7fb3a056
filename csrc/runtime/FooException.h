// Turns foo_sim error codes into the exceptions PyTorch users expect:
// torch.OutOfMemoryError for allocation failures, RuntimeError otherwise,
// always with foo_sim's message naming the offending value.
#pragma once

#include <atomic>
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

// Where the host is in the program that calls foo ("file.py:12"), in storage
// that lives as long as the process, or nullptr if unknown. The runtime
// knows no Python: the Python module installs this.
using LaunchSiteProvider = const char* (*)();
void set_launch_site_provider(LaunchSiteProvider provider);

// While on, each operator launch records where the host is (the provider's
// answer), so that a kernel error reported at a later synchronization names
// the line that launched it, as a launch-blocking run does. pytest --foo
// turns it on; off, a launch pays one predictable branch.
void set_record_launch_sites(bool on);

namespace detail {
extern std::atomic<bool> record_launch_sites;
// The provider's answer; nullptr if there is none.
const char* launch_site();
}  // namespace detail

// Where the host launches from, if launch sites are recorded; else nullptr.
inline const char* launch_site_to_record() {
  return C10_UNLIKELY(detail::record_launch_sites.load(std::memory_order_relaxed)) ? detail::launch_site() : nullptr;
}

}  // namespace foo

#define FOO_CHECK(EXPR)                                                      \
  do {                                                                       \
    const fooError_t foo_check_err_ = (EXPR);                                \
    if (C10_UNLIKELY(foo_check_err_ != fooSuccess)) {                        \
      ::foo::detail::throw_foo_error(foo_check_err_, __FILE__, __LINE__);        \
    }                                                                        \
  } while (0)
