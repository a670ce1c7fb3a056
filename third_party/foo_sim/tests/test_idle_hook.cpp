// fooSetIdleHook: which threads run the hook, when, and that work launched
// while an executor runs it is not lost.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "harness.h"

namespace {

std::mutex g_mutex;
std::set<std::thread::id> g_callers;  // threads that ran the hook
std::atomic<int> g_nap_ms{0};                 // how long an executor's call lasts
std::atomic<bool> g_executor_in_hook{false};
const std::thread::id g_host = std::this_thread::get_id();
std::atomic<bool> g_wrong_kind{false};

void record_caller(fooIdleThread thread, void* user_data) {
  ++*static_cast<std::atomic<int>*>(user_data);
  // The kind foo_sim names is the kind of thread that calls.
  if ((thread == fooIdleHost) != (std::this_thread::get_id() == g_host)) g_wrong_kind = true;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_callers.insert(std::this_thread::get_id());
  }
  if (std::this_thread::get_id() == g_host) return;
  g_executor_in_hook = true;
  if (int ms = g_nap_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  g_executor_in_hook = false;
}

bool ran_on(std::thread::id id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_callers.count(id) > 0;
}

void reset() {
  CHECK_OK(fooSetIdleHook(nullptr, nullptr));
  std::lock_guard<std::mutex> lock(g_mutex);
  g_callers.clear();
  g_nap_ms = 0;
}

}  // namespace

TEST(a_host_blocked_in_a_synchronization_runs_the_hook) {
  std::atomic<int> calls{0};
  CHECK_OK(fooSetIdleHook(&record_caller, &calls));
  // Started on an executor before the host waits, so that the host cannot
  // run it itself: it blocks.
  std::atomic<bool> started{false};
  CHECK_OK(harness::launch(nullptr, [&started] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }));
  while (!started) std::this_thread::yield();
  CHECK_OK(fooDeviceSynchronize());
  CHECK(ran_on(std::this_thread::get_id()));
  CHECK(!g_wrong_kind);
  reset();
}

TEST(an_executor_runs_the_hook_once_it_has_slept_a_while) {
  std::atomic<int> calls{0};
  std::thread::id executor;
  CHECK_OK(harness::launch(nullptr, [&] { executor = std::this_thread::get_id(); }));
  CHECK_OK(harness::wait_by_polling(nullptr));
  CHECK_OK(fooSetIdleHook(&record_caller, &calls));
  // Wake it with work, then leave it idle far longer than it waits before
  // the hook (100 ms).
  CHECK_OK(harness::launch(nullptr, [&] { executor = std::this_thread::get_id(); }));
  CHECK_OK(harness::wait_by_polling(nullptr));
  CHECK(executor != std::this_thread::get_id());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(ran_on(executor));
  CHECK(!g_wrong_kind);
  reset();
}

TEST(work_launched_while_an_executor_runs_the_hook_still_runs) {
  std::atomic<int> calls{0};
  g_nap_ms = 300;  // the executor's call (after 100 ms idle) holds it this long
  CHECK_OK(fooSetIdleHook(&record_caller, &calls));
  CHECK_OK(harness::launch(nullptr, [] {}));
  CHECK_OK(fooStreamSynchronize(nullptr));
  auto t0 = std::chrono::steady_clock::now();
  while (!g_executor_in_hook && harness::ms_since(t0) < 2000) std::this_thread::yield();
  CHECK(g_executor_in_hook);
  std::atomic<bool> ran{false};
  CHECK_OK(harness::launch(nullptr, [&] { ran = true; }));
  CHECK_OK(fooStreamSynchronize(nullptr));
  CHECK(ran);
  reset();
}

TEST(a_null_hook_is_no_hook) {
  std::atomic<int> calls{0};
  CHECK_OK(fooSetIdleHook(&record_caller, &calls));
  CHECK_OK(fooSetIdleHook(nullptr, nullptr));
  CHECK_OK(harness::launch_sleep(nullptr, 20));
  CHECK_OK(fooDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past an executor's 100 ms
  CHECK(calls.load() == 0);
  reset();
}
