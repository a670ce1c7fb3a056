#include "runtime.h"

#include <pthread.h>

#include <utility>

#include "error.h"
#include "race_detector.h"

namespace foo_sim {
namespace {

// Set in a child forked after executor threads started: those threads do not
// exist in the child and the queues' locks may be held by them forever.
std::atomic<bool> g_forked_after_start{false};

void mark_forked_child() { g_forked_after_start.store(true); }

thread_local int t_current_device = 0;

}  // namespace

int exchange_thread_device(int device) { return std::exchange(t_current_device, device); }

Runtime::Runtime() {
  config_error_ = read_config_from_env(&config_);
  if (config_error_) config_.device_count = 0;
  memory_ = std::make_unique<MemoryRegistry>(config_.device_count, config_.device_memory);
  scheduler_ = std::make_unique<Scheduler>(config_);
  if (config_.race_check != fooRaceModeOff) race::set_initial_mode(static_cast<fooRaceMode>(config_.race_check));
}

fooError_t Runtime::get(Runtime** out) {
  // Checked before any lock is touched: in a forked child a lock may be held
  // by a thread that no longer exists.
  if (g_forked_after_start.load(std::memory_order_relaxed)) {
    return fail(fooErrorInitializationError,
                "the foo_sim runtime cannot be used in a process forked after it started "
                "(its executor threads do not exist in the child); start worker processes "
                "with the 'spawn' method, or fork before the first use of a foo device");
  }
  // Leaked on purpose: executors may still run kernels while the process
  // exits, and they must never see a destroyed runtime.
  static Runtime* runtime = new Runtime();
  if (runtime->config_error_) return fail(fooErrorInitializationError, *runtime->config_error_);
  *out = runtime;
  return fooSuccess;
}

fooError_t Runtime::get_started(Runtime** out) {
  if (fooError_t e = get(out)) return e;
  if ((*out)->started()) return fooSuccess;
  return (*out)->start();
}

fooError_t Runtime::start() {
  std::lock_guard<std::mutex> lock(start_mutex_);
  if (started_.load()) return fooSuccess;
  if (config_.device_count == 0) return fail(fooErrorNoDevice, "no foo device: FOO_SIM_DEVICE_COUNT is 0");
  pthread_atfork(nullptr, nullptr, &mark_forked_child);
  scheduler_->start();
  started_.store(true, std::memory_order_release);
  return fooSuccess;
}

fooError_t Runtime::check_device(int device, const char* what) const {
  if (config_.device_count == 0) return fail(fooErrorNoDevice, format("%s: no foo device is available", what));
  if (device < 0 || device >= config_.device_count) {
    return fail(fooErrorInvalidDevice, format("%s: invalid foo device %d (valid devices: 0 to %d)", what, device,
                                              config_.device_count - 1));
  }
  return fooSuccess;
}

int Runtime::current_device() const { return t_current_device; }

fooError_t Runtime::set_current_device(int device) {
  if (fooError_t e = check_device(device, "fooSetDevice")) return e;
  t_current_device = device;
  return fooSuccess;
}

Stream* Runtime::resolve(fooStream_t stream) const {
  return stream != nullptr ? stream : scheduler_->default_stream(t_current_device);
}

fooError_t Runtime::check_may_block(const char* what) {
  if (Scheduler::on_executor_thread()) {
    return fail(fooErrorNotPermitted, format("%s may not be called from inside a kernel: it would wait for "
                                             "the executor that runs the kernel", what));
  }
  return fooSuccess;
}

}  // namespace foo_sim
