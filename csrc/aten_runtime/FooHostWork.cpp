#include "aten_runtime/FooHostWork.h"

#include <ATen/DTensorState.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/autocast_mode.h>

#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <foo_sim/foo_runtime.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooStream.h"

namespace foo {
namespace {

// What the executors have: the state of a thread that torch never touched
// (kernels leave it as they found it, so a new thread's is theirs), whole,
// and the parts a kernel could see, to tell cheaply whether the host has
// it already (setting the whole state and setting it back cost the host
// about 9,000 instructions, a third of a `.item()`).
struct ExecutorState {
  at::ThreadLocalState whole;
  c10::impl::LocalDispatchKeySet keys;
  c10::AutogradState autograd;
  at::impl::TorchFunctionDisabledState torch_function;
  // For the device types autocast runs on, the only ones
  // torch.set_autocast_dtype accepts.
  std::vector<std::pair<c10::DeviceType, at::ScalarType>> autocast_dtypes;

  ExecutorState()
      : keys(c10::impl::tls_local_dispatch_key_set()),
        autograd(c10::AutogradState::get_tls_state()),
        torch_function(at::impl::PythonTorchFunctionTLS::get_disabled_state()) {
    for (int i = 0; i < at::COMPILE_TIME_MAX_DEVICE_TYPES; ++i) {
      auto type = static_cast<c10::DeviceType>(i);
      if (at::autocast::is_autocast_available(type)) {
        autocast_dtypes.emplace_back(type, at::autocast::get_autocast_dtype(type));
      }
    }
  }
};

const ExecutorState& executor_state() {
  static const ExecutorState* const state = [] {
    const ExecutorState* s = nullptr;
    std::thread([&s] { s = new ExecutorState(); }).join();  // never freed: used until exit
    return s;
  }();
  return *state;
}

// Whether the calling thread has no functorch transform on: no functorch
// state, or, on a thread that ran a transform once (torch.func, or
// torch.compile's AOTAutograd), the state it keeps from then on, with an
// empty transform stack; a kernel sees nothing else of it. The stack's
// header needs one that torch does not ship; the state's own check that no
// transform is on (C++ autograd functions are refused under one) tells.
bool no_functorch_transform() {
  const auto& functorch = at::functorch::functorchTLSAccessor();
  if (functorch == nullptr) return true;
  try {
    functorch->checkSupportsCppAutogradFunction();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// Whether the calling thread's state is the executors' in every part a
// kernel could see but the dispatch keys, which differ inside any operator
// (the host waits inside `.item()`, whose autograd kernel excluded the
// autograd keys): those are set alone. Python objects stashed in torch's
// thread-local storage (the autograd engine's context variables, compiled
// graphs' trees) are not compared: only torch's own Python reads them, none
// of it in a kernel.
bool has_executor_state_but_keys() {
  const ExecutorState& e = executor_state();
  const c10::AutogradState& autograd = c10::AutogradState::get_tls_state();
  if (autograd.get_grad_mode() != e.autograd.get_grad_mode() ||
      autograd.get_inference_mode() != e.autograd.get_inference_mode() ||
      autograd.get_fw_grad_mode() != e.autograd.get_fw_grad_mode() ||
      autograd.get_multithreading_enabled() != e.autograd.get_multithreading_enabled() ||
      autograd.get_view_replay_enabled() != e.autograd.get_view_replay_enabled()) {
    return false;
  }
  if (c10::impl::TorchDispatchModeTLS::any_modes_set() || c10::impl::PythonDispatcherTLS::get_state() != nullptr) {
    return false;
  }
  if (at::impl::PythonTorchFunctionTLS::stack_len() != 0 ||
      at::impl::PythonTorchFunctionTLS::get_disabled_state() != e.torch_function) {
    return false;
  }
  const at::RecordFunctionTLS& callbacks = at::get_record_function_tls_();
  if (!callbacks.sorted_tls_callbacks_.empty() || !callbacks.tls_record_function_enabled_) return false;
  const at::impl::SavedTensorDefaultHooksTLS& hooks = at::SavedTensorDefaultHooks::get_tls_state();
  if (!hooks.stack.empty() || hooks.disabled_error_message || hooks.is_tracing) return false;
  if (c10::ThreadLocalDebugInfo::current() != nullptr || !no_functorch_transform()) return false;
  if (at::functionalization::impl::getFunctionalizationReapplyViewsTLS() ||
      at::get_dtensor_allow_implicit_replication()) {
    return false;
  }
  for (const auto& [type, dtype] : e.autocast_dtypes) {
    if (at::autocast::get_autocast_dtype(type) != dtype) return false;
  }
  return true;
}

// The host thread's own, set aside while it runs kernels.
struct HostState {
  std::optional<at::ThreadLocalState> torch;
  std::optional<c10::impl::LocalDispatchKeySet> keys;  // alone, when that is all that differs
  int threads = 1;
  std::vector<FooStream> streams;  // current streams other than the default ones
};
thread_local HostState t_host;
thread_local bool t_running = false;

void begin() {
  t_host.threads = at::get_num_threads();
  if (has_executor_state_but_keys()) {
    t_host.keys = c10::impl::tls_local_dispatch_key_set();
    c10::impl::_force_tls_local_dispatch_key_set(executor_state().keys);
  } else {
    t_host.torch.emplace();
    at::ThreadLocalState::setThreadLocalState(executor_state().whole);
  }
  if (!currentFooStreamsAreDefault()) {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      FooStream current = getCurrentFooStream(d);
      if (current.id() == 0) continue;
      t_host.streams.push_back(current);
      setCurrentFooStream(getDefaultFooStream(d));
    }
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
  if (t_host.keys) {
    c10::impl::_force_tls_local_dispatch_key_set(*t_host.keys);
    t_host.keys.reset();
  }
  if (t_host.torch) {
    at::ThreadLocalState::setThreadLocalState(*t_host.torch);
    t_host.torch.reset();
  }
}

int on_host_work(fooHostWorkPhase phase, void* /*user_data*/) {
  if (phase == fooHostWorkEnd) {
    end();
    return 0;
  }
  if (phase == fooHostWorkAsk) {
    // A host that ran kernels on several intra-op threads would bring its
    // own OpenMP team beside the executors' teams: once libgomp counts more
    // threads than cores it makes every team sleep between parallel regions
    // (CPU's parallel kernels then took up to twice as long). Such a host
    // runs serial kernels only, on one thread (Launch.h, SerialWork): the
    // small operators whose latency host work is for.
    return at::get_num_threads() > 1 ? 1 : 0;
  }
  try {
    begin();
    return 0;
  } catch (...) {
    // Out of memory setting the host's state aside: the host waits for an
    // executor instead, and keeps the state it had.
    end();
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
