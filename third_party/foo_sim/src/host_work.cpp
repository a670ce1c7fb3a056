#include "host_work.h"

#include <atomic>
#include <utility>

#include "runtime.h"
#include "scheduler.h"

namespace foo_sim {
namespace {

// Set before work starts (the API says so); atomics keep a late change
// from being a data race, not from mixing an old hook with new data.
std::atomic<fooHostWorkHook> g_hook{nullptr};
std::atomic<void*> g_user_data{nullptr};

thread_local unsigned long long t_functions_run = 0;

}  // namespace

void set_host_work_hook(fooHostWorkHook hook, void* user_data) {
  g_user_data.store(user_data, std::memory_order_relaxed);
  g_hook.store(hook, std::memory_order_release);
}

HostWorkScope host_work_scope() {
  fooHostWorkHook hook = g_hook.load(std::memory_order_acquire);
  if (hook == nullptr || hook(fooHostWorkAsk, g_user_data.load(std::memory_order_relaxed)) == 0) {
    return HostWorkScope::Any;
  }
  return HostWorkScope::Serial;
}

void count_host_work(size_t functions) { t_functions_run += functions; }

bool HostWork::enter() {
  if (entered_) return true;
  hook_ = g_hook.load(std::memory_order_acquire);
  hook_data_ = g_user_data.load(std::memory_order_relaxed);
  if (hook_ != nullptr && hook_(fooHostWorkBegin, hook_data_) != 0) return false;
  entered_ = true;
  was_on_executor_ = Scheduler::exchange_executor_role(true);
  device_ = exchange_thread_device(0);
  // Most hosts have none to set aside (an error is taken when it is reported).
  if (has_last_error()) error_ = exchange_last_error(LastError());
  capture_mode_ = thread_capture_mode();
  set_thread_capture_mode(fooStreamCaptureModeGlobal);
  label_ = profiler::exchange_thread_label(profiler::ThreadLabel());
  if (race::on()) race_ = race::set_aside_thread_declarations();
  return true;
}

void HostWork::serve_device(int device) { exchange_thread_device(device); }

void HostWork::leave() {
  if (!entered_) return;
  entered_ = false;
  if (race_) race::restore_thread_declarations(std::move(race_));
  profiler::exchange_thread_label(label_);
  set_thread_capture_mode(capture_mode_);
  if (has_last_error() || error_.code != fooSuccess || !error_.detail.empty()) {
    exchange_last_error(std::exchange(error_, LastError()));  // error_ empty again for the next enter
  }
  exchange_thread_device(device_);
  Scheduler::exchange_executor_role(was_on_executor_);
  if (hook_ != nullptr) hook_(fooHostWorkEnd, hook_data_);
}

}  // namespace foo_sim

extern "C" {

fooError_t fooSetHostWorkHook(fooHostWorkHook hook, void* userData) {
  foo_sim::set_host_work_hook(hook, userData);
  return fooSuccess;
}

unsigned long long fooHostWorkCount(void) { return foo_sim::t_functions_run; }

}  // extern "C"
