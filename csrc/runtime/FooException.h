// Turns foo_sim error codes into the exceptions PyTorch users expect:
// torch.OutOfMemoryError for allocation failures, RuntimeError otherwise,
// always with foo_sim's message naming the offending value.
#pragma once

#include <c10/util/Exception.h>
#include <foo_sim/foo_runtime.h>

namespace foo::detail {

[[noreturn]] void throw_foo_error(fooError_t error, const char* file, int line);

}  // namespace foo::detail

#define FOO_CHECK(EXPR)                                                      \
  do {                                                                       \
    const fooError_t foo_check_err_ = (EXPR);                                \
    if (C10_UNLIKELY(foo_check_err_ != fooSuccess)) {                        \
      ::foo::detail::throw_foo_error(foo_check_err_, __FILE__, __LINE__);        \
    }                                                                        \
  } while (0)
