#include "idle_hook.h"

#include <atomic>

namespace foo_sim {
namespace {

// Set before work starts (the API says so); atomics keep a late change
// from being a data race, not from mixing an old hook with new data.
std::atomic<fooIdleHook> g_hook{nullptr};
std::atomic<void*> g_user_data{nullptr};

}  // namespace

void set_idle_hook(fooIdleHook hook, void* user_data) {
  g_user_data.store(user_data, std::memory_order_relaxed);
  g_hook.store(hook, std::memory_order_release);
}

bool has_idle_hook() { return g_hook.load(std::memory_order_relaxed) != nullptr; }

void run_idle_hook(fooIdleThread thread) {
  if (fooIdleHook hook = g_hook.load(std::memory_order_acquire)) hook(thread, g_user_data.load(std::memory_order_relaxed));
}

}  // namespace foo_sim

extern "C" fooError_t fooSetIdleHook(fooIdleHook hook, void* userData) {
  foo_sim::set_idle_hook(hook, userData);
  return fooSuccess;
}
