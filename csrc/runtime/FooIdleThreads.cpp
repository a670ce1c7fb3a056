#include "runtime/FooIdleThreads.h"

#include <omp.h>

#include <atomic>
#include <chrono>

#include <foo_sim/foo_runtime.h>

#include "runtime/FooException.h"

namespace foo {
namespace {

// libgomp counts the threads of every team in the process, idle or not.
// Once they outnumber the cores it makes all of them sleep after about 100
// spins between parallel regions, instead of spinning for about 3 ms, so
// that every region starts by waking its team, often onto one shared core.
// Every executor that runs a parallel kernel is the master of a team of its
// own, beside the main thread's: measured here, after one foo matmul a
// process ran CPU PyTorch's MLP training step in 5.1 ms instead of 3.2, and
// foo's kernels were slowed alike. A team whose master sleeps is given
// back, so that the teams still counted are those of threads at work.
//
// Getting a team back is dear: the first MLP step on a new team took 8 to
// 10 ms instead of 3.3 (new threads, each with its BLAS buffers to fill).
// foo_sim calls an executor's hook only after 100 ms without work. A host
// thread gives its team back only while an executor may hold one (alone,
// its team slows no one), and at most once per kGiveBackEvery, so that a
// loop of CPU operators and synchronizations does not pay for a new team
// in every iteration.
constexpr auto kGiveBackEvery = std::chrono::milliseconds(100);

std::atomic<int> g_executors_with_teams{0};
thread_local bool t_counted = false;  // this executor is in g_executors_with_teams

void give_team_back(fooIdleThread thread, void* /*user_data*/) {
  // omp_pause_resource_all fails, harmlessly, inside a parallel region.
  if (thread == fooIdleExecutor) {
    (void)omp_pause_resource_all(omp_pause_soft);
    if (t_counted) {
      t_counted = false;
      g_executors_with_teams.fetch_sub(1, std::memory_order_relaxed);
    }
    return;
  }
  if (g_executors_with_teams.load(std::memory_order_relaxed) == 0) return;
  thread_local auto last = std::chrono::steady_clock::time_point{};
  auto now = std::chrono::steady_clock::now();
  if (now - last < kGiveBackEvery) return;
  last = now;
  (void)omp_pause_resource_all(omp_pause_soft);
}

}  // namespace

void release_openmp_teams_when_idle() { FOO_CHECK(fooSetIdleHook(&give_team_back, nullptr)); }

void note_executor_parallel_kernel() {
  if (t_counted) return;
  t_counted = true;
  g_executors_with_teams.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace foo
