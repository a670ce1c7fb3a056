#include "FooHostWork.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <optional>
#include <thread>
#include <vector>

#include <foo_sim/foo_runtime.h>

#include "FooException.h"
#include "FooFunctions.h"
#include "FooStream.h"

namespace foo {
namespace {

// What the executors have: the state of a thread that torch never touched.
// Kernels leave it as they found it, so a new thread's is theirs.
const at::ThreadLocalState& executor_state() {
  static const at::ThreadLocalState* const state = [] {
    const at::ThreadLocalState* s = nullptr;
    std::thread([&s] { s = new at::ThreadLocalState(); }).join();  // never freed: used until exit
    return s;
  }();
  return *state;
}

// The host thread's own, set aside while it runs kernels.
struct HostState {
  std::optional<at::ThreadLocalState> torch;
  int threads = 1;
  std::vector<FooStream> streams;  // current streams other than the default ones
};
thread_local HostState t_host;
thread_local bool t_running = false;

void begin() {
  t_host.torch.emplace();
  t_host.threads = at::get_num_threads();
  at::ThreadLocalState::setThreadLocalState(executor_state());
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
    FooStream current = getCurrentFooStream(d);
    if (current.id() == 0) continue;
    t_host.streams.push_back(current);
    setCurrentFooStream(getDefaultFooStream(d));
  }
  t_running = true;
}

void end() {
  t_running = false;
  for (const FooStream& s : t_host.streams) setCurrentFooStream(s);
  t_host.streams.clear();
  // Kernels run on the threads they were launched with (use_thread_count):
  // the host gets its own count back.
  if (at::get_num_threads() != t_host.threads) at::set_num_threads(t_host.threads);
  at::ThreadLocalState::setThreadLocalState(*t_host.torch);
  t_host.torch.reset();
}

int on_host_work(fooHostWorkPhase phase, void* /*user_data*/) {
  if (phase == fooHostWorkEnd) {
    end();
    return 0;
  }
  try {
    begin();
    return 0;
  } catch (...) {
    // Out of memory setting the host's state aside: the host waits for an
    // executor instead, and keeps the state it had.
    if (t_host.torch) end();
    return 1;
  }
}

}  // namespace

void run_host_work_in_executor_state() {
  (void)executor_state();  // made before any work: its thread must not start inside a wait
  FOO_CHECK(fooSetHostWorkHook(&on_host_work, nullptr));
}

bool running_host_work() { return t_running; }

}  // namespace foo
