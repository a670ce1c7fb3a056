// Queues a C++ callable as a kernel on a foo stream.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <foo_sim/foo_profiler.h>

#include "runtime/FooDeferredRelease.h"
#include "runtime/FooException.h"
#include "runtime/FooGraphsUtils.h"
#include "runtime/FooStream.h"

namespace foo {

// Asks for the cache lines of [p, p + bytes) (at most the first 32: a hint,
// for graph replays, not a copy).
inline void prefetch_bytes(const void* p, size_t bytes) {
  constexpr uintptr_t kLine = 64, kMaxLines = 32;
  uintptr_t first = reinterpret_cast<uintptr_t>(p) / kLine;
  uintptr_t last = std::min((reinterpret_cast<uintptr_t>(p) + std::max<size_t>(bytes, 1) - 1) / kLine,
                            first + kMaxLines - 1);
  for (uintptr_t line = first; line <= last; ++line) __builtin_prefetch(reinterpret_cast<const void*>(line * kLine));
}

// A graph replay's hint for one closure (foo_runtime.h): the closure's own
// prefetch if it has one, else the closure itself, at the first stage.
template <class F>
void prefetch_closure(const F& fn, int stage) {
  if constexpr (requires { fn.prefetch(stage); }) {
    fn.prefetch(stage);
  } else if (stage == 0) {
    prefetch_bytes(&fn, sizeof(F));
  }
}

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
// What a graph replay calls ahead of a captured kernel.
template <class F>
void prefetch_boxed(void* data, int stage) {
  prefetch_closure(*static_cast<const F*>(data), stage);
}
template <class F>
void release_boxed(void* data) {
  delete static_cast<F*>(data);
}

template <class F>
struct DeferredReleaseBox final : FinishedClosure {
  // Builds the closure in place from make()'s result: a kernel's closure
  // (tensor layouts, packed scalars) is moved once, from the call into
  // the box.
  template <class Make>
  DeferredReleaseBox(std::in_place_t, Make& make) : fn(make()) {
    destroy = &destroy_box;
  }
  static void destroy_box(FinishedClosure* k) { delete static_cast<DeferredReleaseBox*>(k); }
  F fn;
};
template <class F>
void run_then_defer_release(void* data) {
  auto* box = static_cast<DeferredReleaseBox<F>*>(data);
  struct DeferRelease {
    DeferredReleaseBox<F>* box;
    ~DeferRelease() { defer_release(box); }
  } defer_release_when_done{box};
  box->fn();
}

template <class Box>
void launch_box(const FooStream& stream, std::unique_ptr<Box> boxed, void (*run)(void*), const char* name,
                unsigned int flags) {
  fooError_t e = fooLaunchKernelEx(stream.stream(), run, boxed.get(), name, flags);
  // foo_sim owns the box once the launch was accepted, even if the kernel
  // already ran and failed (FOO_SIM_LAUNCH_BLOCKING=1).
  if (e == fooSuccess || e == fooErrorLaunchFailure) boxed.release();
  if (e == fooErrorLaunchFailure) throw_launch_failure(__FILE__, __LINE__);
  FOO_CHECK(e);
}
}  // namespace detail

// Who destroys a kernel's closure once it has run.
enum class ClosureRelease {
  // The executor, at once: for closures that own foo memory, buffers or
  // state whose release must not wait for the host's next launch.
  OnExecutor,
  // A launching thread, at its next launch (FooDeferredRelease.h): for the
  // operator hot path, whose closures hold only values and CPU copies.
  Deferred,
};

// `fn` runs once on an executor of the stream's device after the work
// queued before it; an exception it throws becomes the stream's
// asynchronous error, reported by the first synchronization that covers it.
// `name` (static storage: an operator's name) is what the profiler shows.
// On a capturing stream `fn` becomes a graph node instead, run by every
// replay (so it must not consume what it captured) and destroyed with the
// graph.
//
// launch_kernel_made takes a `make` that returns the closure, built straight
// into its box; launch_kernel takes the closure itself. `flags`:
// fooLaunchKernelEx's (fooKernelSerial for a kernel that starts no thread
// team); a captured kernel is a graph node, which has none.
template <ClosureRelease Release = ClosureRelease::OnExecutor, class Make>
void launch_kernel_made(const FooStream& stream, Make&& make, const char* name,
                        unsigned int flags = fooKernelDefault) {
  using Fn = decltype(make());
  if (captures_underway() != 0) {
    // foo_sim owns the box from the call on, whatever it returns.
    fooError_t e = fooLaunchHostFuncOwnedWithPrefetch(stream.stream(), &detail::run_boxed<Fn>, new Fn(make()),
                                                      &detail::release_boxed<Fn>, &detail::prefetch_boxed<Fn>, name);
    if (e == fooErrorLaunchFailure) detail::throw_launch_failure(__FILE__, __LINE__);
    FOO_CHECK(e);
    return;
  }
  // No capture anywhere: the cheaper launch, which runs the box once.
  if constexpr (Release == ClosureRelease::Deferred) {
    detail::release_finished_closures();
    detail::launch_box(stream, std::make_unique<detail::DeferredReleaseBox<Fn>>(std::in_place, make),
                       &detail::run_then_defer_release<Fn>, name, flags);
  } else {
    detail::launch_box(stream, std::unique_ptr<Fn>(new Fn(make())), &detail::run_boxed_kernel<Fn>, name, flags);
  }
}

template <ClosureRelease Release = ClosureRelease::OnExecutor, class F>
void launch_kernel(const FooStream& stream, F&& fn, const char* name) {
  launch_kernel_made<Release>(stream, [&]() -> std::decay_t<F> { return std::forward<F>(fn); }, name);
}

}  // namespace foo
