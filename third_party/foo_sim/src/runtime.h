// The process-wide runtime: configuration, memory and scheduler, created at
// the first call and started (executor threads) at the first call that
// queues work. Also the guard every entry point passes first.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config.h"
#include "memory.h"
#include "scheduler.h"

namespace foo_sim {

// Makes `device` the calling thread's current device, unchecked, and
// returns the one it had: for threads that run kernels (scheduler.cpp).
int exchange_thread_device(int device);

class Runtime {
 public:
  // The runtime, or an error (bad configuration, forked child) to return.
  static fooError_t get(Runtime** out);
  // Like get(), and also starts the executor threads on first use.
  static fooError_t get_started(Runtime** out);

  const Config& config() const { return config_; }
  MemoryRegistry& memory() { return *memory_; }
  Scheduler& scheduler() { return *scheduler_; }
  bool started() const { return started_.load(std::memory_order_acquire); }

  fooError_t check_device(int device, const char* what) const;
  int current_device() const;
  fooError_t set_current_device(int device);
  // The default stream of the current device for a null handle.
  Stream* resolve(fooStream_t stream) const;
  // fooErrorNotPermitted on executor threads, where blocking would deadlock.
  static fooError_t check_may_block(const char* what);

 private:
  Runtime();
  fooError_t start();

  Config config_;
  std::optional<std::string> config_error_;
  std::unique_ptr<MemoryRegistry> memory_;
  std::unique_ptr<Scheduler> scheduler_;
  std::mutex start_mutex_;
  std::atomic<bool> started_{false};
};

}  // namespace foo_sim
