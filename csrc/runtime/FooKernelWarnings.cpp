#include "runtime/FooKernelWarnings.h"

#include "runtime/FooGraphWarnings.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace foo {
namespace {

// A kernel that warns in a loop while the host never waits must not grow
// memory without bound: past this many, warnings are counted, not kept.
constexpr size_t kMaxHeld = 1000;

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

}  // namespace

class KernelWarningInbox : public c10::WarningHandler {
 public:
  // On an executor, inside a kernel's KernelWarningScope.
  void process(const c10::Warning& warning) override {
    if (KernelWarningInbox* to = passes_to.load(std::memory_order_acquire)) return to->process(warning);
    std::string message = t_op_name ? std::string(t_op_name) + ": " + warning.msg() : warning.msg();
    c10::Warning held(warning.type(), warning.source_location(), std::move(message), warning.verbatim());
    std::lock_guard<std::mutex> lock(mutex_);
    if (retired_) {
      stderr_handler()->process(held);  // its thread has ended
    } else if (held_.size() < kMaxHeld) {
      held_.push_back(std::move(held));
    } else {
      ++dropped_;
    }
    has_warnings.store(true, std::memory_order_relaxed);
  }

  // On the inbox's own thread (or at exit, `to_stderr`).
  void reraise(bool to_stderr = false) {
    if (!to_stderr && c10::WarningUtils::get_warning_handler() == stderr_handler()) return;
    std::vector<c10::Warning> taken;
    size_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken.swap(held_);
      std::swap(dropped, dropped_);
      has_warnings.store(false, std::memory_order_relaxed);
    }
    for (const c10::Warning& w : taken) {
      to_stderr ? stderr_handler()->process(w) : c10::warn(w);
    }
    if (dropped > 0) {
      c10::Warning more(c10::UserWarning(), {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                        std::to_string(dropped) + " more warnings raised by foo kernels were dropped (at most " +
                            std::to_string(kMaxHeld) + " are held between two launches or waits of the host)",
                        false);
      to_stderr ? stderr_handler()->process(more) : c10::warn(more);
    }
  }

  // The thread has ended: what it never raised, and what comes later, goes to stderr.
  void retire() {
    reraise(/*to_stderr=*/true);
    std::lock_guard<std::mutex> lock(mutex_);
    retired_ = true;
  }

  std::atomic<bool> has_warnings{false};
  static thread_local const char* t_op_name;

  // A graph's inbox (FooGraphWarnings.h) holds nothing: it passes its
  // warnings to the replaying thread's. A thread's own inbox has none.
  std::atomic<KernelWarningInbox*> passes_to{nullptr};
  // While a capture into this graph inbox is underway; `outer` is the
  // capturing thread's enclosing capture's inbox, if any.
  std::atomic<bool> capturing{false};
  KernelWarningInbox* outer = nullptr;

 private:
  std::mutex mutex_;
  std::vector<c10::Warning> held_;
  size_t dropped_ = 0;
  bool retired_ = false;
};

thread_local const char* KernelWarningInbox::t_op_name = nullptr;

namespace {

struct Inboxes {
  std::mutex mutex;
  std::vector<KernelWarningInbox*> all;
};

Inboxes& inboxes() {
  static Inboxes* const instance = [] {
    auto* i = new Inboxes();  // never destroyed: executors may warn during exit
    // What no Python-aware call raised before exit goes to stderr, as c10 would print it.
    std::atexit([] {
      std::lock_guard<std::mutex> lock(inboxes().mutex);
      for (KernelWarningInbox* box : inboxes().all) box->reraise(/*to_stderr=*/true);
    });
    return i;
  }();
  return *instance;
}

// The calling thread's inbox, made at its first launch and retired when it ends.
struct ThreadInbox {
  KernelWarningInbox* box = nullptr;
  ~ThreadInbox() {
    if (box) box->retire();
  }
};
thread_local ThreadInbox t_inbox;
thread_local KernelWarningInbox* t_inbox_fast = nullptr;  // trivially destructible: readable without a guard
// The graph inbox of the capture this thread has underway, if any.
thread_local KernelWarningInbox* t_capture_inbox = nullptr;

}  // namespace

KernelWarningInbox* launching_thread_inbox() {
  if (C10_UNLIKELY(t_capture_inbox != nullptr)) {
    if (t_capture_inbox->capturing.load(std::memory_order_relaxed)) return t_capture_inbox;
    t_capture_inbox = nullptr;  // its capture was ended by another thread
  }
  return own_thread_inbox();
}

KernelWarningInbox* own_thread_inbox() {
  if (C10_LIKELY(t_inbox_fast != nullptr)) return t_inbox_fast;
  auto* box = new KernelWarningInbox();
  {
    std::lock_guard<std::mutex> lock(inboxes().mutex);
    inboxes().all.push_back(box);
  }
  t_inbox.box = box;
  t_inbox_fast = box;
  return box;
}

KernelWarningInbox* new_graph_warning_inbox() {
  auto* graph = new KernelWarningInbox();
  graph->passes_to.store(own_thread_inbox(), std::memory_order_release);
  return graph;
}

void begin_capture_warnings(KernelWarningInbox* graph) {
  graph->passes_to.store(own_thread_inbox(), std::memory_order_release);
  graph->outer = t_capture_inbox;
  graph->capturing.store(true, std::memory_order_relaxed);
  t_capture_inbox = graph;
}

void end_capture_warnings(KernelWarningInbox* graph) noexcept {
  graph->capturing.store(false, std::memory_order_relaxed);
  if (t_capture_inbox == graph) t_capture_inbox = graph->outer;
}

void point_graph_warnings(KernelWarningInbox* graph, KernelWarningInbox* replayer) noexcept {
  graph->passes_to.store(replayer, std::memory_order_release);
}

KernelWarningScope::KernelWarningScope(const char* op_name, KernelWarningInbox* inbox)
    : previous_handler_(c10::WarningUtils::get_warning_handler()) {
  c10::WarningUtils::set_warning_handler(inbox);
  KernelWarningInbox::t_op_name = op_name;
}

KernelWarningScope::~KernelWarningScope() {
  c10::WarningUtils::set_warning_handler(previous_handler_);
  KernelWarningInbox::t_op_name = nullptr;
}

bool detail::has_held_kernel_warnings() {
  return t_inbox_fast != nullptr && t_inbox_fast->has_warnings.load(std::memory_order_relaxed);
}

void detail::reraise_held_kernel_warnings() { t_inbox_fast->reraise(); }

}  // namespace foo
