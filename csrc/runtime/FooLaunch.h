// Queues a C++ callable as a kernel on a foo stream.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include <foo_sim/foo_profiler.h>

#include "runtime/FooException.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooStream.h"

namespace foo {

namespace detail {
template <class F>
void run_boxed_kernel(void* data) {
  std::unique_ptr<F> fn(static_cast<F*>(data));
  (*fn)();
}
template <class F>
void run_boxed(void* data) {
  (*static_cast<F*>(data))();
}
template <class F>
void release_boxed(void* data) {
  delete static_cast<F*>(data);
}
}  // namespace detail

// `fn` runs once on an executor of the stream's device after the work
// queued before it; an exception it throws becomes the stream's
// asynchronous error, reported by the first synchronization that covers it.
// `name` (static storage: an operator's name) is what the profiler shows.
// On a capturing stream `fn` becomes a graph node instead, run by every
// replay (so it must not consume what it captured) and destroyed with the
// graph.
template <class F>
void launch_kernel(const FooStream& stream, F&& fn, const char* name) {
  using Fn = std::decay_t<F>;
  auto boxed = std::make_unique<Fn>(std::forward<F>(fn));
  if (captures_underway() != 0) {
    // foo_sim owns the box from the call on, whatever it returns.
    fooError_t e = fooLaunchHostFuncOwned(stream.stream(), &detail::run_boxed<Fn>, boxed.release(),
                                          &detail::release_boxed<Fn>, name);
    if (e == fooErrorLaunchFailure) detail::throw_launch_failure(__FILE__, __LINE__);
    FOO_CHECK(e);
    return;
  }
  // No capture anywhere: the cheaper launch, which runs the box once and frees it.
  fooError_t e = fooLaunchKernel(stream.stream(), &detail::run_boxed_kernel<Fn>, boxed.get(), name);
  // foo_sim owns the box once the launch was accepted, even if the kernel
  // already ran and failed (FOO_SIM_LAUNCH_BLOCKING=1).
  if (e == fooSuccess || e == fooErrorLaunchFailure) boxed.release();
  if (e == fooErrorLaunchFailure) detail::throw_launch_failure(__FILE__, __LINE__);
  FOO_CHECK(e);
}

}  // namespace foo
