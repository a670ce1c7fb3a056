#include "runtime/FooKernelWarnings.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace foo {

namespace detail {
std::atomic<bool> kernel_warnings_held{false};
}  // namespace detail

namespace {

// A kernel that warns in a loop while the host never waits must not grow
// memory without bound: past this many, warnings are counted, not kept.
constexpr size_t kMaxHeld = 1000;

thread_local const char* t_op_name = nullptr;

// c10's handler of a thread that installed none: it prints to stderr. Some
// of torch's Python bindings wait without installing Python's (among them
// torch.accelerator.synchronize); warnings stay held through those, for the
// next call that shows them to Python. A new thread has no handler of its own.
c10::WarningHandler* stderr_handler() {
  static c10::WarningHandler* const handler = [] {
    c10::WarningHandler* h = nullptr;
    std::thread([&h] { h = c10::WarningUtils::get_warning_handler(); }).join();
    return h;
  }();
  return handler;
}

class HeldWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    std::string message = t_op_name ? std::string(t_op_name) + ": " + warning.msg() : warning.msg();
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_.size() < kMaxHeld) {
      held_.emplace_back(warning.type(), warning.source_location(), std::move(message), warning.verbatim());
    } else {
      ++dropped_;
    }
    detail::kernel_warnings_held.store(true, std::memory_order_relaxed);
  }

  void reraise(bool at_exit = false) {
    if (!at_exit && c10::WarningUtils::get_warning_handler() == stderr_handler()) return;
    std::vector<c10::Warning> taken;
    size_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken.swap(held_);
      std::swap(dropped, dropped_);
      detail::kernel_warnings_held.store(false, std::memory_order_relaxed);
    }
    for (const c10::Warning& w : taken) c10::warn(w);
    if (dropped > 0) {
      TORCH_WARN(dropped, " more warnings raised by foo kernels were dropped (at most ", kMaxHeld,
                 " are held between two launches or waits of the host)");
    }
  }

 private:
  std::mutex mutex_;
  std::vector<c10::Warning> held_;
  size_t dropped_ = 0;
};

HeldWarnings& held() {
  static HeldWarnings* const instance = [] {
    auto* h = new HeldWarnings();  // never destroyed: executors may warn during exit
    // What no Python-aware call raised before exit goes to stderr, as c10 would print it.
    std::atexit([] { held().reraise(/*at_exit=*/true); });
    return h;
  }();
  return *instance;
}

}  // namespace

KernelWarningScope::KernelWarningScope(const char* op_name)
    : previous_handler_(c10::WarningUtils::get_warning_handler()), previous_op_name_(t_op_name) {
  c10::WarningUtils::set_warning_handler(&held());
  t_op_name = op_name;
}

KernelWarningScope::~KernelWarningScope() {
  c10::WarningUtils::set_warning_handler(previous_handler_);
  t_op_name = previous_op_name_;
}

void detail::reraise_held_kernel_warnings() { held().reraise(); }

}  // namespace foo
