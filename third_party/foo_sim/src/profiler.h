// Activity tracing inside the runtime (the C API is foo_sim/foo_profiler.h).
//
// An API entry point that queues work labels it (ScopedLabel: kind, name,
// bytes) for the calling thread; Scheduler::push stamps the queued command
// with that label, the thread's correlation id and the launch time, only
// while tracing is on; the executor times stamped commands around the work
// and records them. With tracing off, each step is one relaxed load (and
// the label's few stores: a stream capture names its nodes with it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "foo_sim/foo_profiler.h"

namespace foo_sim {

// What a command carries for the profiler; `traced` is false unless
// tracing was on when it was queued.
struct ActivityStamp {
  bool traced = false;
  fooActivityKind kind = fooActivityKindKernel;
  const char* name = nullptr;
  uint64_t correlation = 0;
  int64_t launch_ns = 0;
  uint64_t bytes = 0;
  fooMemcpyKind memcpy_kind = fooMemcpyDefault;
  int launch_thread = 0;
};

namespace profiler {

extern std::atomic<bool> g_tracing;

inline bool tracing() { return g_tracing.load(std::memory_order_relaxed); }

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Labels the work the calling thread queues while it lives.
class ScopedLabel {
 public:
  ScopedLabel(fooActivityKind kind, const char* name, uint64_t bytes = 0, fooMemcpyKind memcpy_kind = fooMemcpyDefault);
  ~ScopedLabel();
  ScopedLabel(const ScopedLabel&) = delete;
  ScopedLabel& operator=(const ScopedLabel&) = delete;
};

// The calling thread's current label, if a ScopedLabel is set (whether or
// not tracing is on); leaves the outputs alone otherwise.
void current_label(fooActivityKind* kind, const char** name, uint64_t* bytes, fooMemcpyKind* memcpy_kind);
// The calling thread's label (if `labelled`) and correlation id, as a
// thread that runs queued work in place of an executor sets them aside.
struct ThreadLabel {
  bool labelled = false;
  fooActivityKind kind = fooActivityKindKernel;
  const char* name = nullptr;
  uint64_t bytes = 0;
  fooMemcpyKind memcpy_kind = fooMemcpyDefault;
  uint64_t correlation = 0;
};
// Gives the calling thread `next` and returns what it had.
ThreadLabel exchange_thread_label(const ThreadLabel& next);

// Fills `stamp` for a command being queued by this thread (tracing is on).
void stamp(ActivityStamp& stamp);
// Records a stamped command that ran from start_ns to end_ns.
void record(const ActivityStamp& stamp, int device, fooStream_t stream, int64_t start_ns, int64_t end_ns) noexcept;

}  // namespace profiler
}  // namespace foo_sim
