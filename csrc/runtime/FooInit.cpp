#include "runtime/FooInit.h"

#include <pthread.h>

#include <atomic>
#include <mutex>

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooFaults.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooIdleThreads.h"

namespace foo {
namespace {

std::atomic<bool> g_initialized{false};
std::atomic<void (*)()> g_aten_init_step{nullptr};
std::atomic<bool> g_in_bad_fork{false};
std::mutex g_init_mutex;

void on_fork_child() {
  g_in_bad_fork.store(true);
  g_initialized.store(false);
}

}  // namespace

void lazy_init() {
  if (C10_LIKELY(g_initialized.load(std::memory_order_acquire))) return;
  if (g_in_bad_fork.load()) throw_bad_fork_error();
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_initialized.load()) return;
  TORCH_CHECK(device_count() > 0, "Found no foo devices: ", no_device_reason());
  arm_faults_from_environment();
  FOO_CHECK(fooInit());
  if (auto step = g_aten_init_step.load()) step();
  release_openmp_teams_when_idle();
  // Registered once: the flag must survive every later fork.
  static const int registered = pthread_atfork(nullptr, nullptr, &on_fork_child);
  (void)registered;
  g_initialized.store(true, std::memory_order_release);
}

void set_aten_init_step(void (*step)()) { g_aten_init_step.store(step); }

bool is_initialized() { return g_initialized.load(std::memory_order_acquire); }

bool in_bad_fork() { return g_in_bad_fork.load(); }

void throw_bad_fork_error() {
  TORCH_CHECK(false,
              "Cannot re-initialize foo in forked subprocess. To use foo with multiprocessing, "
              "you must use the 'spawn' start method");
}

}  // namespace foo
