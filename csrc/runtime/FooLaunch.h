// Queues a C++ callable as a kernel on a foo stream.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include <foo_sim/foo_profiler.h>

#include "runtime/FooException.h"
#include "runtime/FooStream.h"

namespace foo {

namespace detail {
template <class F>
void run_boxed_kernel(void* data) {
  std::unique_ptr<F> fn(static_cast<F*>(data));
  (*fn)();
}
}  // namespace detail

// `fn` runs once on an executor of the stream's device after the work
// queued before it; an exception it throws becomes the stream's
// asynchronous error, reported by the first synchronization that covers it.
// `name` (static storage: an operator's name) is what the profiler shows.
template <class F>
void launch_kernel(const FooStream& stream, F&& fn, const char* name) {
  using Fn = std::decay_t<F>;
  auto boxed = std::make_unique<Fn>(std::forward<F>(fn));
  fooError_t e = fooLaunchKernel(stream.stream(), &detail::run_boxed_kernel<Fn>, boxed.get(), name);
  // foo_sim owns the box once the launch was accepted, even if the kernel
  // already ran and failed (FOO_SIM_LAUNCH_BLOCKING=1).
  if (e == fooSuccess || e == fooErrorLaunchFailure) boxed.release();
  if (e == fooErrorLaunchFailure) detail::throw_launch_failure(__FILE__, __LINE__);
  FOO_CHECK(e);
}

}  // namespace foo
